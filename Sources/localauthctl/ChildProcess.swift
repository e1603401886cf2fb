// SPDX-License-Identifier: Apache-2.0

#if canImport(Glibc)
    import Glibc
#endif

/// A child program started without a shell, its standard input `/dev/null` and its standard output
/// a pipe this process reads (`output`); the caller closes `output` and reaps `pid`.
struct ChildProcess {
    let pid: pid_t
    let output: Int32

    /// Starts `program` with `arguments` (argv[0] is `program`) and `environment` (`NAME=value`
    /// entries ending in nil; nil: this process's own). `quiet`: its standard error goes to
    /// `/dev/null`. Nil when the pipe or the spawn failed.
    static func start(
        _ program: String, _ arguments: [String], environment: [UnsafeMutablePointer<CChar>?]? = nil,
        quiet: Bool = false
    ) -> ChildProcess? {
        var pipeFDs: [Int32] = [-1, -1]
        guard pipe(&pipeFDs) == 0 else { return nil }
        _ = fcntl(pipeFDs[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(pipeFDs[1], F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], STDOUT_FILENO)
        if quiet { posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0) }
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        var cArgs = ([program] + arguments).map { strdup($0) }
        cArgs.append(nil)
        defer { cArgs.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned: Int32
        if let environment {
            spawned = posix_spawn(&pid, program, &actions, nil, cArgs, environment)
        } else {
            spawned = posix_spawn(&pid, program, &actions, nil, cArgs, environ)
        }
        Glibc.close(pipeFDs[1])
        guard spawned == 0 else {
            Glibc.close(pipeFDs[0])
            return nil
        }
        return ChildProcess(pid: pid, output: pipeFDs[0])
    }
}
