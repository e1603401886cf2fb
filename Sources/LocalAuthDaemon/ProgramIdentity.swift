// SPDX-License-Identifier: Apache-2.0

#if canImport(Glibc)
    import Glibc
#endif

/// Which program a process is, as far as Linux can vouch for it: the owner of the rights it saves
/// (`docs/adr/0012-right-ownership.md`). Read by the daemon from the process pinned at accept
/// (`PeerProcess`), never from anything the process sends (its environment, argv, `comm`).
public enum ProgramIdentity: Equatable, Sendable, CustomStringConvertible {
    /// A Flatpak app: `[Application] name` of the `/.flatpak-info` that flatpak puts at the root of
    /// the app's sandbox (read through `/proc/<pid>/root`).
    case flatpak(String)
    /// A strictly confined snap: the snap's instance name in the AppArmor label the kernel gave the
    /// process at exec (`snap.NAME.APP`), agreeing with its tracking cgroup when that names a snap.
    case snap(String)
    /// Any other process: the file the kernel runs (`/proc/<pid>/exe`), when that path names that
    /// very file in init's mount namespace.
    case executable(String)

    /// How a right's record names its owner.
    public var stored: String {
        switch self {
        case .flatpak(let id): "flatpak:" + id
        case .snap(let name): "snap:" + name
        case .executable(let path): "exe:" + path
        }
    }

    public var description: String { stored }

    /// What the daemon could make of a process: a program, or why it cannot tell (then no right is
    /// the process's: fail closed).
    public enum Reading: Equatable, Sendable {
        case known(ProgramIdentity)
        case unknown(String)

        public var identity: ProgramIdentity? {
            if case .known(let identity) = self { return identity }
            return nil
        }
    }

    /// Reads the identity of the process whose `/proc/<pid>` directory is `procfd`. `executable` is
    /// what `PeerProcess.executable(procfd:)` found (the path and whether it is that file).
    static func read(procfd: Int32, executable: (path: String, isAtItsPath: Bool)?) -> Reading {
        switch flatpakInfo(procfd: procfd) {
        case .failure(let why): return .unknown(why.reason)
        case .success(let info?):
            guard let id = parseFlatpakInfo(info) else { return .unknown("its /.flatpak-info names no valid app ID") }
            return .known(.flatpak(id))
        case .success(nil): break
        }
        let label = PeerProcess.read("attr/current", procfd: procfd)
        let cgroup = PeerProcess.read("cgroup", procfd: procfd)
        switch snapName(label: label, cgroup: cgroup) {
        case .failure(let why): return .unknown(why.reason)
        case .success(let name?): return .known(.snap(name))
        case .success(nil): break
        }
        guard let executable else { return .unknown("the daemon may not read its executable (/proc/<pid>/exe)") }
        guard executable.isAtItsPath else {
            return .unknown(
                "its executable \(executable.path) is not the file at that path (deleted, replaced, or mounted over in a namespace of its own)"
            )
        }
        return .known(.executable(executable.path))
    }

    struct Refusal: Error, Equatable {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    // MARK: - Flatpak

    /// `/.flatpak-info` at the process's root, read through `procfd` (`root` is the process's own
    /// root, as the kernel keeps it); nil when there is none (not a Flatpak app).
    static func flatpakInfo(procfd: Int32) -> Result<String?, Refusal> {
        let root = openat(procfd, "root", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard root >= 0 else { return .failure(Refusal("the daemon may not open its root (/proc/<pid>/root)")) }
        defer { close(root) }
        let fd = openat(root, ".flatpak-info", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else {
            return errno == ENOENT ? .success(nil) : .failure(Refusal("its /.flatpak-info cannot be read"))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            return .failure(Refusal("its /.flatpak-info is not a file"))
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count <= maximumFlatpakInfoSize {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            bytes += buffer[0..<n]
        }
        guard bytes.count <= maximumFlatpakInfoSize else { return .failure(Refusal("its /.flatpak-info is too large")) }
        return .success(String(decoding: bytes, as: UTF8.self))
    }

    static let maximumFlatpakInfoSize = 64 * 1024

    /// The app ID of a `.flatpak-info` (a GLib key file): `name` in `[Application]`, or in `[Runtime]`
    /// when the sandbox runs a runtime itself (as flatpak writes it). Nil when there is none, or it is
    /// not a valid app ID.
    static func parseFlatpakInfo(_ text: String) -> String? {
        var group = ""
        var groups: Set<String> = []
        var names: [String: String] = [:]
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = raw.drop { $0 == " " || $0 == "\t" }
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]") else { return nil }
                group = String(line.dropFirst().dropLast())
                groups.insert(group)
                continue
            }
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingSpaces
            guard key == "name", names[group] == nil else { continue }
            names[group] = String(line[line.index(after: equals)...].trimmingSpaces)
        }
        guard let id = names[groups.contains("Runtime") ? "Runtime" : "Application"], isValidFlatpakID(id) else {
            return nil
        }
        return id
    }

    /// Flatpak's rule for an app ID: at most 255 bytes, three or more dot-separated elements of
    /// `[A-Za-z0-9_-]`, none empty or starting with a digit, `-` only in the last.
    static func isValidFlatpakID(_ id: String) -> Bool {
        let bytes = Array(id.utf8)
        guard (1...255).contains(bytes.count) else { return false }
        let elements = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard elements.count >= 3 else { return false }
        for (i, element) in elements.enumerated() {
            guard let first = element.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else {
                return false
            }
            let last = i == elements.count - 1
            for c in element {
                let letter =
                    (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(c)
                    || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c)
                let digit = (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c)
                guard letter || digit || c == UInt8(ascii: "_") || (last && c == UInt8(ascii: "-")) else {
                    return false
                }
            }
        }
        return true
    }

    // MARK: - Snap

    /// The snap a process belongs to: the AppArmor label the kernel gave it (`snap.NAME.APP` or
    /// `snap.NAME.hook.HOOK`, then ` (enforce)` or ` (complain)`), which must agree with the tracking
    /// cgroup (`…/snap.NAME.APP-….scope`, `snap.NAME.APP.service`) when that names a snap. Nil: not a
    /// confined snap (no snap label; a classic snap, or any process the user's systemd put into a
    /// scope named `snap.…`, which proves nothing: it is then a program by its executable). A label
    /// and a cgroup naming different snaps: refused.
    static func snapName(label: String?, cgroup: String?) -> Result<String?, Refusal> {
        let fromLabel = label.flatMap(snapFromLabel)
        let fromCgroup = cgroup.flatMap(snapFromCgroup)
        switch (fromLabel, fromCgroup) {
        case (nil, _): return .success(nil)
        case (let name?, nil): return .success(name)
        case (let a?, let b?):
            return a == b ? .success(a) : .failure(Refusal("its AppArmor label names the snap \(a), its cgroup \(b)"))
        }
    }

    static func snapFromLabel(_ label: String) -> String? {
        let text = String(label.prefix { $0 != "\n" && $0 != "\0" })
        let profile = text.hasSuffix(")") ? String(text[..<(text.lastIndex(of: " ") ?? text.endIndex)]) : text
        let parts = profile.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count >= 3, parts[0] == "snap", isValidSnapInstance(parts[1]), !parts[2].isEmpty else { return nil }
        return String(parts[1])
    }

    /// The first `snap.NAME.` element of the unified hierarchy's path (`0::/…`), or of the
    /// `name=systemd` or freezer hierarchy's under cgroup v1.
    static func snapFromCgroup(_ cgroup: String) -> String? {
        for line in cgroup.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3, fields[1].isEmpty || fields[1] == "name=systemd" || fields[1] == "freezer" else {
                continue
            }
            for element in fields[2].split(separator: "/") where element.hasPrefix("snap.") {
                let parts = element.split(separator: ".", omittingEmptySubsequences: false)
                guard parts.count >= 3, isValidSnapInstance(parts[1]) else { continue }
                return String(parts[1])
            }
        }
        return nil
    }

    /// snapd's rule for an instance name: `NAME` or `NAME_KEY`; the name lower-case letters, digits and
    /// inner dashes, with a letter (at most 40); the key lower-case letters and digits (at most 10).
    static func isValidSnapInstance(_ instance: Substring) -> Bool {
        let halves = instance.split(separator: "_", maxSplits: 1, omittingEmptySubsequences: false)
        let name = halves[0]
        guard (1...40).contains(name.count), name.first != "-", name.last != "-", !name.contains("--"),
            name.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-") }),
            name.contains(where: { $0.isLetter })
        else { return false }
        guard halves.count == 2 else { return true }
        let key = halves[1]
        return (1...10).contains(key.count) && key.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber) }
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var s = self
        while let c = s.first, c == " " || c == "\t" || c == "\r" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" || c == "\r" { s = s.dropLast() }
        return s
    }
}
