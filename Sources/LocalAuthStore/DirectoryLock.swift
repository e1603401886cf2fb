// SPDX-License-Identifier: Apache-2.0
import Glibc

/// `<state>/daemon.lock`, held with `flock(2)` for as long as the store that took it lives, so
/// that two daemons never write one state directory (issue 13, L6). The kernel releases it when
/// the process ends, however it ends, so a crash never leaves the directory locked. The holder
/// writes its pid into the file for the next one's error message.
enum DirectoryLock {
    static let fileName = "daemon.lock"

    /// The open, locked file's descriptor; `inUse` naming the holder's pid when another process
    /// holds the lock.
    static func acquire(_ directory: String) throws(StoreError) -> Int32 {
        let path = directory + "/" + fileName
        let fd = try Sys.call("open \(path)") { open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600) }
        while flock(fd, LOCK_EX | LOCK_NB) == -1 {
            let code = errno
            if code == EINTR { continue }
            let holder = code == EWOULDBLOCK ? holderPID(fd) : nil
            Sys.close(fd)
            guard code == EWOULDBLOCK else { throw .io("flock \(path)", errno: code) }
            let who = holder.map { "localauthd pid \($0)" } ?? "another localauthd"
            throw .inUse("\(directory) is in use by \(who); two daemons must not share a state directory")
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        return fd
    }

    /// The pid the holder wrote, when the file holds one.
    private static func holderPID(_ fd: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 16)
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return nil }
        return Int32(String(decoding: buffer[0..<n], as: UTF8.self).split(separator: "\n").first ?? "")
    }
}
