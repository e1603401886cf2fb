// SPDX-License-Identifier: Apache-2.0
import Glibc

/// Why a test could not set up what it needs (a directory, a socket, a process): not a finding
/// about the code under test.
package enum HarnessError: Error {
    case setup(String)
}

/// Fresh directories under /tmp, one per test: no two runs (nor two tests running side by side)
/// share a path.
package enum TemporaryDirectory {
    /// Makes `/tmp/<prefix>-XXXXXX` (`mkdtemp`: mode 0700, a name nobody else has) and returns its
    /// path. Keep `prefix` short: a Unix socket in it has at most 107 bytes of path.
    package static func make(_ prefix: String) throws -> String {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard let made else { throw HarnessError.setup("mkdtemp /tmp/\(prefix)-XXXXXX failed: errno \(errno)") }
        return String(cString: made)
    }

    /// Removes `path` and everything below it (`rm -rf`), directories a test made unreadable too;
    /// never follows a symbolic link. For test directories only.
    package static func remove(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            unlink(path)
            return
        }
        chmod(path, 0o700)
        if let dir = opendir(path) {
            var names: [String] = []
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) {
                    String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
                }
                if name != "." && name != ".." { names.append(name) }
            }
            closedir(dir)
            for name in names { remove(path + "/" + name) }
        }
        rmdir(path)
    }
}
