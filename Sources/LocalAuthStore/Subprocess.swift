// SPDX-License-Identifier: Apache-2.0
import Glibc

/// Runs a helper program (only `systemd-creds`) with bytes on its standard input, and collects its
/// standard output and error. Inputs and outputs are small (a credential is under 1 KiB), so the
/// pipes never fill while the other side waits; a child that outlives `timeoutMs` is killed.
enum Subprocess {
    struct Outcome {
        var status: Int32
        var output: [UInt8]
        var errorText: String
    }

    static func run(_ path: String, _ arguments: [String], input: [UInt8], timeoutMs: Int32 = 30_000) throws(StoreError)
        -> Outcome
    {
        var toChild: [Int32] = [-1, -1]
        var fromChild: [Int32] = [-1, -1]
        var errors: [Int32] = [-1, -1]
        for index in 0..<3 {
            var pair: [Int32] = [-1, -1]
            try Sys.call("pipe") { pipe(&pair) }
            for fd in pair { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            switch index {
            case 0: toChild = pair
            case 1: fromChild = pair
            default: errors = pair
            }
        }
        defer { for fd in toChild + fromChild + errors where fd >= 0 { Sys.close(fd) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errors[1], 2)
        // The child gets nothing else of ours: not the daemon's sockets, not a test's pipes (a
        // long-lived child holding a pipe's write end keeps its reader from ever seeing EOF).
        closeInheritedDescriptors(&actions)
        // Nor the daemon's signal mask: its threads block every stop signal (libdispatch's workers
        // do), which the child would inherit, and then only SIGKILL would stop a hung systemd-creds.
        // It starts with nothing blocked and every signal at its default action (SIGPIPE is ignored
        // by the daemon, and an ignored signal stays ignored across exec).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, &attributes, argv, environ)
        guard spawned == 0 else { throw .io("run \(path)", errno: spawned) }
        for index in [0, 1] {
            Sys.close([toChild[0], fromChild[1]][index])
        }
        toChild[0] = -1
        fromChild[1] = -1
        Sys.close(errors[1])
        errors[1] = -1
        try? Sys.writeAll(toChild[1], input, path: "\(path) stdin")
        Sys.close(toChild[1])
        toChild[1] = -1
        let output = drain(fromChild[0], timeoutMs: timeoutMs)
        let errorBytes = drain(errors[0], timeoutMs: 1000)
        var status: Int32 = 0
        var waited: pid_t = 0
        // Its output is closed; it exits at once, or is killed when it does not within the limit.
        for _ in 0..<(max(timeoutMs, 10) / 10) {
            repeat { waited = waitpid(pid, &status, WNOHANG) } while waited == -1 && errno == EINTR
            if waited != 0 { break }
            usleep(10_000)
        }
        if waited == 0 {
            kill(pid, SIGKILL)
            repeat { waited = waitpid(pid, &status, 0) } while waited == -1 && errno == EINTR
            return Outcome(status: -1, output: [], errorText: "\(path) did not finish in \(timeoutMs) ms")
        }
        // WIFEXITED / WEXITSTATUS / WTERMSIG are macros: spelled out.
        let exited = status & 0x7f == 0
        var errorText = String(decoding: errorBytes.prefix(2048), as: UTF8.self)
        // Ended by a signal (a stop of the service reaches its child too): its last line says so.
        if !exited { errorText += "\n\(path) was ended by signal \(status & 0x7f)" }
        return Outcome(status: exited ? (status >> 8) & 0xff : -1, output: output, errorText: errorText)
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34+), which the Glibc module does not
    /// declare; else a close action for every descriptor open now.
    private static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") {
            if unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3) == 0 { return }
        }
        guard let directory = opendir("/proc/self/fd") else { return }
        defer { closedir(directory) }
        var open: [Int32] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if let fd = Int32(name), fd > 2 { open.append(fd) }
        }
        for fd in open where fd != dirfd(directory) { posix_spawn_file_actions_addclose(&actions, fd) }
    }

    /// Reads to end of file, giving up after `timeoutMs` without data.
    private static func drain(_ fd: Int32, timeoutMs: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 20 {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, timeoutMs)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { break }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            bytes += buffer[0..<n]
        }
        return bytes
    }
}
