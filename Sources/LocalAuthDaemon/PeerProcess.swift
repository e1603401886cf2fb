// SPDX-License-Identifier: Apache-2.0

#if canImport(Glibc)
    import Glibc
#endif

/// The process that opened a connection, pinned when the connection is accepted so that a pid
/// the kernel has since given to another process is never taken for it (issue 13, L4: a
/// connection inherited after its creator exits was judged by a dead, maybe reused, pid).
///
/// Pinned with `SO_PEERPIDFD` (Linux 6.5+: a pidfd of exactly the process that called connect),
/// else with a directory descriptor of `/proc/<pid>` opened at accept: reads through it fail once
/// the process is gone, even if the pid is reused. Without `SO_PEERPIDFD` (Debian 12's stock 6.1
/// kernel), a pid reused between connect and accept (a few microseconds) is the one case it
/// cannot tell apart. One descriptor per connection either way.
public final class PeerProcess: Sendable {
    public let pid: Int32
    /// `SO_PEERPIDFD`'s pidfd, or -1 when the kernel has none.
    let pidfd: Int32
    /// `/proc/<pid>` opened at accept when there is no pidfd, else -1 (and -1 when the process was
    /// already gone).
    let procfd: Int32
    /// The real uid of the process, read at accept through `procfd` (`/proc/<pid>/status`).
    public let realUID: UInt32?
    /// The program's name as the kernel keeps it (`/proc/<pid>/comm`, 15 bytes at most), read at
    /// accept. An ordinary process chooses it (`prctl(PR_SET_NAME)`, or the name of a link it runs
    /// through); a setuid-root one cannot be renamed by the user (`Whereabouts.programName`).
    public let command: String?
    /// The program's executable (`/proc/<pid>/exe`, the kernel's path of the file it runs), read at
    /// accept: it names whose request a prompt is. A process cannot choose it without running that
    /// file (issue 26: a process renamed `sudo` was shown as sudo). Nil when the daemon may not read
    /// it: another uid's exe needs `CAP_SYS_PTRACE`, which the shipped unit does not grant.
    public let executable: String?
    /// Whether `executable` names, in the host's mount namespace, the very file the process runs;
    /// false when a namespace of the user's own put another file at that path (`sameFile`).
    public let executableIsAtItsPath: Bool
    /// The controlling terminal (`tty_nr` of `/proc/<pid>/stat`, a device number), read at accept;
    /// nil without one.
    public let controllingTTY: UInt32?

    /// Pins `pid`; `pidfd` is `SO_PEERPIDFD`'s, or -1.
    public init(pid: Int32, pidfd: Int32) {
        self.pid = pid
        self.pidfd = pidfd
        let dir = open("/proc/\(pid)", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        var uid = dir >= 0 ? Self.realUID(procfd: dir) : nil
        var command = dir >= 0 ? Self.read("comm", procfd: dir).map(Self.firstLine) : nil
        var tty = dir >= 0 ? Self.read("stat", procfd: dir).flatMap(Self.parseTTY) : nil
        var executable = dir >= 0 ? Self.executable(procfd: dir) : nil
        // With a pidfd: what was read is the connector's only if it was still there after the read
        // (a pid is not reused while its process lives); the pidfd alone answers from then on.
        if pidfd >= 0 {
            if Self.hasExited(pidfd: pidfd) {
                uid = nil
                command = nil
                tty = nil
                executable = nil
            }
            if dir >= 0 { close(dir) }
            procfd = -1
        } else {
            procfd = dir
        }
        realUID = uid
        self.command = command
        self.executable = executable?.path
        executableIsAtItsPath = executable?.isAtItsPath ?? false
        controllingTTY = tty
    }

    deinit {
        if pidfd >= 0 { close(pidfd) }
        if procfd >= 0 { close(procfd) }
    }

    /// True while the process that connected still runs (not exited, not a zombie); false once
    /// it is gone, and false when it could not be pinned at all: fail closed.
    public var isStillRunning: Bool {
        if pidfd >= 0 { return !Self.hasExited(pidfd: pidfd) }
        guard procfd >= 0, let state = Self.state(procfd: procfd) else { return false }
        return state != "Z" && state != "X" && state != "x"
    }

    /// A pidfd polls readable once its process has exited.
    static func hasExited(pidfd: Int32) -> Bool {
        var p = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) != 0
    }

    /// The file `name` under the pinned `/proc/<pid>`, at most 4 KiB; nil once the process is gone
    /// (the kernel answers ESRCH for a directory whose process has been reaped).
    static func read(_ name: String, procfd: Int32) -> String? {
        let fd = openat(procfd, name, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n], as: UTF8.self)
    }

    /// The path of the file the process runs (`readlinkat(procfd, "exe")`), and whether that path
    /// names that file outside the process's own mount namespace. The path is as the process's
    /// namespace sees it: a user's namespace (`unshare -rm`) can bind any file over `/usr/bin/sudo`,
    /// and its exe then reads "/usr/bin/sudo"; the file itself (`fstatat` through the link: device
    /// and inode) cannot be chosen that way. Nil once the process is gone, for a kernel thread, and
    /// when the daemon may not read it (no `CAP_SYS_PTRACE` for another uid's process).
    static func executable(procfd: Int32) -> (path: String, isAtItsPath: Bool)? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBufferPointer { readlinkat(procfd, "exe", $0.baseAddress!, $0.count) }
        guard n > 0 else { return nil }
        let path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var running = stat()
        guard fstatat(procfd, "exe", &running, 0) == 0 else { return nil }
        return (path, sameFile(path, running))
    }

    /// Whether `path` is the file `running` describes (a removed file, " (deleted)", is not): in init's
    /// mount namespace (`/proc/1/root`, which no user can change, and which has the `/home` and `/tmp`
    /// the unit hides from the daemon), else, when the daemon may not look there, in its own.
    static func sameFile(_ path: String, _ running: stat) -> Bool {
        var named = stat()
        if stat("/proc/1/root" + path, &named) != 0 {
            guard errno == EACCES || errno == EPERM, stat(path, &named) == 0 else { return false }
        }
        return named.st_dev == running.st_dev && named.st_ino == running.st_ino
    }

    /// The first number of `status`'s `Uid:` line: real, effective, saved, file system.
    static func realUID(procfd: Int32) -> UInt32? {
        guard let status = read("status", procfd: procfd) else { return nil }
        return parseRealUID(status: status)
    }

    static func parseRealUID(status: String) -> UInt32? {
        for line in status.split(separator: "\n") where line.hasPrefix("Uid:") {
            return line.dropFirst(4).split(whereSeparator: { $0 == "\t" || $0 == " " }).first.flatMap { UInt32($0) }
        }
        return nil
    }

    /// The state letter of `stat` (R, S, D, Z, …); the command name before it may hold anything,
    /// so it is read after the last ")".
    static func state(procfd: Int32) -> Character? {
        guard let stat = read("stat", procfd: procfd) else { return nil }
        return parseState(stat: stat)
    }

    static func firstLine(_ text: String) -> String {
        String(text.prefix { $0 != "\n" })
    }

    /// `tty_nr`, the fifth field after the command's closing ")" (state, ppid, pgrp, session, tty_nr);
    /// nil when it is 0 (no controlling terminal).
    static func parseTTY(stat: String) -> UInt32? {
        guard let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 4, let tty = Int64(fields[4]), tty > 0, tty <= Int64(UInt32.max) else { return nil }
        return UInt32(tty)
    }

    static func parseState(stat: String) -> Character? {
        guard let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: close)...].first { $0 != " " }
    }
}
