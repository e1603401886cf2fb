// SPDX-License-Identifier: Apache-2.0

#if canImport(Glibc)
    import Glibc
#endif

enum SSHAgentSocket {
    static var defaultPath: String {
        if let runtime = getenv("XDG_RUNTIME_DIR"), runtime.pointee == UInt8(ascii: "/") {
            return String(cString: runtime) + "/localauth/ssh-agent"
        }
        return "/run/user/\(getuid())/localauth/ssh-agent"
    }

    /// `LISTEN_FDS=1` for this process: systemd's socket, descriptor 3.
    static func systemdSocket() -> Int32? {
        guard let pid = getenv("LISTEN_PID"), Int32(String(cString: pid)) == getpid(), let fds = getenv("LISTEN_FDS"),
            String(cString: fds) == "1"
        else { return nil }
        unsetenv("LISTEN_PID")
        unsetenv("LISTEN_FDS")
        unsetenv("LISTEN_FDNAMES")
        _ = fcntl(3, F_SETFD, FD_CLOEXEC)
        return 3
    }

    /// Binds `path` mode 0600 in a directory that is ours and 0700 (made so when missing; an
    /// existing one that others can enter is refused, not changed). A stale socket is replaced.
    static func listen(path: String) throws(FileError) -> Int32 {
        let dir = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        if mkdir(dir, 0o700) != 0 && errno != EEXIST { throw FileError(path: dir, errno: errno) }
        var st = stat()
        guard lstat(dir, &st) == 0 else { throw FileError(path: dir, errno: errno) }
        guard st.st_mode & S_IFMT == S_IFDIR, st.st_uid == getuid(), st.st_mode & 0o077 == 0 else {
            throw FileError(path: dir, errno: EPERM)
        }
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw FileError(path: path, errno: errno) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw FileError(path: path, errno: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        if lstat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFSOCK { unlink(path) }
        let old = umask(0o177)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        umask(old)
        guard bound == 0, chmod(path, 0o600) == 0, Glibc.listen(fd, 16) == 0 else {
            let e = errno
            close(fd)
            throw FileError(path: path, errno: e)
        }
        return fd
    }
}

/// What the agent knows about the process on the other end of a connection.
final class AgentPeer: Sendable {
    let pid: Int32
    let uid: UInt32
    /// The executable (`/proc/<pid>/exe`), read while the process was pinned, for the agent's own
    /// log; nil when it could not be. The daemon reads it again itself, from `pidfd`.
    let executable: String?
    /// A pidfd of the process, passed to the daemon with each request (REQUESTER): the daemon names
    /// the program from it, never from this agent's word. `SO_PEERPIDFD` (Linux 6.5+: exactly the
    /// process that connected), else `pidfd_open` of `SO_PEERCRED`'s pid; -1 when neither worked.
    let pidfd: Int32

    /// SO_PEERCRED, the process pinned by its pidfd (else `/proc/<pid>` opened first), then its exe.
    init?(fd: Int32) {
        var cred = (pid: Int32(0), uid: UInt32(0), gid: UInt32(0))
        var size = socklen_t(MemoryLayout.size(ofValue: cred))
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &size) == 0 else { return nil }
        pid = cred.pid
        uid = cred.uid
        var pidfd: Int32 = -1
        var pidfdSize = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(fd, SOL_SOCKET, 77, &pidfd, &pidfdSize) != 0 { pidfd = -1 }  // SO_PEERPIDFD, Linux 6.5+
        if pidfd < 0 { pidfd = Int32(truncatingIfNeeded: pidfdOpen(Int(cred.pid), 0, 0)) }
        if pidfd >= 0 { _ = fcntl(pidfd, F_SETFD, FD_CLOEXEC) }
        let dir = open("/proc/\(cred.pid)", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        var link = [UInt8](repeating: 0, count: 4096)
        let n = dir >= 0 ? readlinkat(dir, "exe", &link, link.count - 1) : -1
        var exe = n > 0 ? String(decoding: link[0..<n], as: UTF8.self) : nil
        if pidfd >= 0 {
            var p = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
            if poll(&p, 1, 0) != 0 { exe = nil }  // exited: the pid may name another process now
        }
        if dir >= 0 { close(dir) }
        executable = exe
        self.pidfd = max(pidfd, -1)
    }

    deinit { if pidfd >= 0 { close(pidfd) } }
}

/// `syscall(SYS_pidfd_open, pid, flags)` (434 on every architecture; variadic in C, so declared
/// with its integer arguments, as x86-64's and arm64's calling conventions pass them).
@_silgen_name("syscall")
private func syscall3(_ number: Int, _ a: Int, _ b: Int, _ c: Int) -> Int

private func pidfdOpen(_ pid: Int, _ flags: Int, _ unused: Int) -> Int { syscall3(434, pid, flags, unused) }
