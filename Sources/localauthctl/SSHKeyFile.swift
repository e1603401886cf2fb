// SPDX-License-Identifier: Apache-2.0
import LocalAuthClient
import LocalAuthLocalization
import LocalAuthProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// One ssh key's options, as `ssh-key create` set them (docs/adr/0011-ssh-agent.md: why they live
/// in the user's own file and not in the daemon).
struct SSHKeyEntry: Equatable {
    var name: String
    var allowForwarding: Bool
    var reuseSeconds: Int64

    /// The right that holds the key: a reserved namespace of the account's rights.
    var identifier: String { SSHKeyEntry.prefix + name }
    static let prefix = "ssh-key:"

    /// Names a person can type and a file line can hold: letters, digits, `.`, `_`, `-`, `@`; 1 … 64.
    static func isValidName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count)
            && name.utf8.allSatisfy { c in
                (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a)
                    || c == UInt8(ascii: ".") || c == UInt8(ascii: "_") || c == UInt8(ascii: "-")
                    || c == UInt8(ascii: "@")
            } && !name.hasPrefix("-")
    }

    var line: String { "\(name) forwarding=\(allowForwarding ? "yes" : "no") reuse=\(reuseSeconds)" }

    init(name: String, allowForwarding: Bool, reuseSeconds: Int64) {
        self.name = name
        self.allowForwarding = allowForwarding
        self.reuseSeconds = reuseSeconds
    }

    init?(line: Substring) {
        let words = line.split(separator: " ")
        guard let first = words.first, SSHKeyEntry.isValidName(String(first)) else { return nil }
        name = String(first)
        allowForwarding = false
        reuseSeconds = 0
        for word in words.dropFirst() {
            if word == "forwarding=yes" { allowForwarding = true }
            if word.hasPrefix("reuse="), let n = Int64(word.dropFirst(6)), (0...300).contains(n) { reuseSeconds = n }
        }
    }
}

/// `$XDG_CONFIG_HOME/localauth/ssh-keys` (else `~/.config/localauth/ssh-keys`): the names of the
/// account's ssh keys and their options, one line each. The keys themselves are rights in the
/// daemon; this file holds nothing secret.
enum SSHKeyFile {
    static var directory: String {
        if let xdg = getenv("XDG_CONFIG_HOME"), xdg.pointee == UInt8(ascii: "/") {
            return String(cString: xdg) + "/localauth"
        }
        if let home = getenv("HOME"), home.pointee == UInt8(ascii: "/") {
            return String(cString: home) + "/.config/localauth"
        }
        if let pw = getpwuid(getuid()), let dir = pw.pointee.pw_dir {
            return String(cString: dir) + "/.config/localauth"
        }
        return "/nonexistent"
    }

    static var path: String { directory + "/ssh-keys" }

    static func load() -> [SSHKeyEntry] {
        guard let text = readSmallFile(path, limit: 1 << 20) else { return [] }
        return text.split(separator: "\n").compactMap { SSHKeyEntry(line: $0) }
    }

    /// Writes the whole file anew (a temporary file renamed over it), mode 0600.
    static func save(_ entries: [SSHKeyEntry]) throws(FileError) {
        let dir = directory
        let parent = String(dir[..<(dir.lastIndex(of: "/") ?? dir.endIndex)])
        if !parent.isEmpty { mkdir(parent, 0o700) }
        mkdir(dir, 0o700)
        let temporary = path + ".new"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw FileError(path: temporary, errno: errno) }
        let text = entries.map { $0.line + "\n" }.joined()
        let ok = text.utf8CString.withUnsafeBufferPointer { buf in
            write(fd, buf.baseAddress, buf.count - 1) == buf.count - 1
        }
        let synced = fsync(fd) == 0
        close(fd)
        guard ok, synced, rename(temporary, path) == 0 else {
            let e = errno
            unlink(temporary)
            throw FileError(path: path, errno: e)
        }
    }

    static func readSmallFile(_ path: String, limit: Int) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while bytes.count <= limit {
            let n = read(fd, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            bytes += buffer[0..<n]
        }
        return String(decoding: bytes.prefix(limit), as: UTF8.self)
    }
}

struct FileError: Error {
    var path: String
    var errno: Int32
    var text: String { "\(path): \(String(cString: strerror(errno)))" }
}
