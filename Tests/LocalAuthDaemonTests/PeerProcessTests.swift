// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import LocalAuthDaemon

#if canImport(Glibc)
    import Glibc
#endif

/// The process behind a connection, pinned at accept (issue 13, L4 and M2).
@Suite struct PeerProcessTests {
    /// Starts `argv` with posix_spawn (not reaped until `reap`).
    static func spawn(_ argv: [String]) throws -> pid_t {
        var pid: pid_t = 0
        var cArgs = argv.map { strdup($0) } + [nil]
        defer { for p in cArgs { free(p) } }
        try #require(posix_spawn(&pid, argv[0], nil, nil, &cArgs, environ) == 0)
        return pid
    }

    static func reap(_ pid: pid_t) {
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
    }

    @Test func isStillRunning_whileTheProcessRuns_andNotAfterItExited() throws {
        let pid = try Self.spawn(["/bin/sleep", "30"])
        let pinned = PeerProcess(pid: pid, pidfd: -1)
        #expect(pinned.isStillRunning)
        #expect(pinned.realUID == getuid())
        kill(pid, SIGKILL)
        // A zombie (exited, not yet reaped) is gone already: its pid is about to be free.
        while PeerProcess.state(procfd: pinned.procfd) != "Z" { usleep(1000) }
        #expect(!pinned.isStillRunning)
        Self.reap(pid)
        #expect(!pinned.isStillRunning, "reaped: the pinned /proc entry answers no more")
    }

    @Test func isStillRunning_whenThePIDWasGoneAtAccept_isFalse() throws {
        let pid = try Self.spawn(["/bin/true"])
        Self.reap(pid)
        let pinned = PeerProcess(pid: pid, pidfd: -1)
        #expect(!pinned.isStillRunning)
        #expect(pinned.realUID == nil)
    }

    @Test func parse_whenTheCommandNameLooksLikeFields_readsTheRealState() {
        #expect(PeerProcess.parseState(stat: "42 (evil) R (x) 1 2 3) S 1 42 42 0") == "S")
        #expect(PeerProcess.parseRealUID(status: "Name:\tsu\nUid:\t1000\t0\t0\t0\nGid:\t1000\t0\t0\t0\n") == 1000)
        #expect(PeerProcess.parseRealUID(status: "Name:\tx\n") == nil)
    }

    /// Who the per-uid limits count a caller under.
    @Test func accountUID_isTheRealUIDOfARootCredentialedProcess() throws {
        let plain = PeerCredentials(pid: 1, uid: 1000, gid: 1000, userName: "alice")
        #expect(plain.accountUID == 1000)
        let pid = try Self.spawn(["/bin/sleep", "30"])
        defer {
            kill(pid, SIGKILL)
            Self.reap(pid)
        }
        // This test process runs as root in CI: the real uid read through /proc is 0.
        let real = PeerCredentials(
            pid: pid, uid: 0, gid: 0, userName: "root", process: PeerProcess(pid: pid, pidfd: -1))
        #expect(real.accountUID == getuid())
        let gone = try Self.spawn(["/bin/true"])
        Self.reap(gone)
        let unknown = PeerCredentials(
            pid: gone, uid: 0, gid: 0, userName: "root", process: PeerProcess(pid: gone, pidfd: -1))
        #expect(unknown.accountUID == PeerCredentials.unattributedUID)
        #expect(!unknown.isStillTheConnectingProcess)
    }
}
