// SPDX-License-Identifier: Apache-2.0

#if canImport(Glibc)
    import Glibc
#endif

/// Why the daemon refused the pidfd a client passed as its requester (docs/protocol.md, "The
/// requester"). Each is answered with an ERROR and a closed connection; the daemon serves on.
public enum RequesterRefusal: Error, Equatable, Sendable {
    /// The descriptor is not a pidfd (a file, a socket, …).
    case notAPidfd
    /// The process has exited (before the daemon could read it, or while it read it).
    case exited
    /// The process runs as another account (its real uid), or its uid could not be read.
    case otherAccount(uid: UInt32?)

    /// English: the ERROR frame's message (a protocol detail, as every ERROR's).
    public var message: String {
        switch self {
        case .notAPidfd: "the descriptor passed is not a pidfd"
        case .exited: "the requester has exited"
        case .otherAccount(let uid):
            "the requester runs as another account (uid \(uid.map(String.init) ?? "unknown")), not the caller's"
        }
    }
}

extension PeerProcess {
    /// The process a client names as its requester by a pidfd, pinned as a connecting process is
    /// (`init(pid:pidfd:)`): its executable is read through `/proc/<pid>` and kept only if the pidfd
    /// says the process still ran after the read, so a pid the kernel gave to another process is
    /// never taken for it. It must run as `callerUID` (its real uid): a client names only processes
    /// of its own account, never a root process or another user's. Takes `pidfd` (closed on refusal).
    public static func requester(pidfd: Int32, callerUID: UInt32) -> Result<PeerProcess, RequesterRefusal> {
        guard let pid = pidOfPidfd(pidfd) else {
            close(pidfd)
            return .failure(.notAPidfd)
        }
        guard pid > 0, !hasExited(pidfd: pidfd) else {
            close(pidfd)
            return .failure(.exited)
        }
        let process = PeerProcess(pid: pid, pidfd: pidfd)  // owns the pidfd from here
        guard process.isStillRunning, let uid = process.realUID else { return .failure(.exited) }
        guard uid == callerUID else { return .failure(.otherAccount(uid: uid)) }
        return .success(process)
    }

    /// The pid a pidfd refers to (`Pid:` of `/proc/self/fdinfo/N`; -1 or 0 once it has exited, as
    /// kernels differ), or nil when `fd` is not a pidfd: its link must read `anon_inode:[pidfd]`
    /// (Linux before 6.9) or `pidfd:…` (pidfs), which no file, socket or pipe can.
    static func pidOfPidfd(_ fd: Int32) -> Int32? {
        var link = [CChar](repeating: 0, count: 64)
        let n = link.withUnsafeMutableBufferPointer { readlink("/proc/self/fd/\(fd)", $0.baseAddress!, $0.count - 1) }
        guard n > 0 else { return nil }
        let target = String(decoding: link[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard target == "anon_inode:[pidfd]" || target.hasPrefix("pidfd:") else { return nil }
        let info = open("/proc/self/fdinfo/\(fd)", O_RDONLY | O_CLOEXEC)
        guard info >= 0 else { return nil }
        defer { close(info) }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let got = buffer.withUnsafeMutableBytes { Glibc.read(info, $0.baseAddress, $0.count) }
        guard got > 0 else { return nil }
        return parsePid(fdinfo: String(decoding: buffer[0..<got], as: UTF8.self))
    }

    static func parsePid(fdinfo: String) -> Int32? {
        for line in fdinfo.split(separator: "\n") where line.hasPrefix("Pid:") {
            return Int32(line.dropFirst(4).drop { $0 == "\t" || $0 == " " })
        }
        return nil
    }
}
