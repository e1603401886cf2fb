// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import LocalAuthDaemon

#if canImport(Glibc)
    import Glibc
#endif

@_silgen_name("syscall")
private func syscall3(_ number: Int, _ a: Int, _ b: Int, _ c: Int) -> Int

/// `pidfd_open(pid, 0)` (434 on every architecture), at a high number (`aboveTheOthers`).
private func pidfdOpen(_ pid: pid_t) -> Int32 {
    aboveTheOthers(Int32(truncatingIfNeeded: syscall3(434, Int(pid), 0, 0)))
}

/// `fd` moved to a number from 900 up. The tests run on many threads at once, each given the lowest
/// free number: checked right after the refusal, a low number closed by it was often another test's
/// already (a flaky "still open"). No thread of the test process comes near 900.
private func aboveTheOthers(_ fd: Int32) -> Int32 {
    guard fd >= 0 else { return fd }
    let high = fcntl(fd, F_DUPFD_CLOEXEC, 900)
    close(fd)
    return high
}

private func isOpen(_ fd: Int32) -> Bool { fcntl(fd, F_GETFD) >= 0 }

private func refusal(_ result: Result<PeerProcess, RequesterRefusal>) -> RequesterRefusal? {
    if case .failure(let why) = result { why } else { nil }
}

/// The process a client names by a pidfd (REQUESTER, docs/protocol.md "The requester"): the
/// daemon's checks of the descriptor itself. Through the socket: `Tests/ssh/ssh_agent_test.py`.
@Suite struct RequesterProcessTests {
    @Test func requester_ofItsOwnAccount_isNamedByTheExecutableTheDaemonReads() throws {
        let fd = pidfdOpen(getpid())
        try #require(fd >= 0)
        guard case .success(let process) = PeerProcess.requester(pidfd: fd, callerUID: getuid()) else {
            Issue.record("refused")
            return
        }
        var link = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &link, link.count - 1)
        #expect(process.executable == String(decoding: link[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self))
        #expect(process.pid == getpid())
    }

    @Test func requester_ofAnotherAccount_isRefused_andItsPidfdClosed() throws {
        let fd = pidfdOpen(getpid())
        try #require(fd >= 0)
        guard case .failure(let refusal) = PeerProcess.requester(pidfd: fd, callerUID: getuid() &+ 1) else {
            Issue.record("accepted a process of another uid")
            return
        }
        #expect(refusal == .otherAccount(uid: getuid()))
        #expect(!isOpen(fd))
    }

    @Test func requester_thatExited_isRefusedAsExited() throws {
        var pid: pid_t = 0
        var argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
        defer { free(argv[0]) }
        try #require(posix_spawn(&pid, "/bin/true", nil, nil, &argv, environ) == 0)
        let fd = pidfdOpen(pid)
        try #require(fd >= 0)
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
        #expect(refusal(PeerProcess.requester(pidfd: fd, callerUID: getuid())) == .exited)
        #expect(!isOpen(fd))
    }

    @Test func requester_whoseDescriptorIsNoPidfd_isRefused_andTheDescriptorClosed() {
        let fd = aboveTheOthers(open("/dev/null", O_RDONLY | O_CLOEXEC))
        #expect(refusal(PeerProcess.requester(pidfd: fd, callerUID: getuid())) == .notAPidfd)
        #expect(!isOpen(fd))
    }

    @Test func pidOfPidfd_readsFdinfosPidLine() {
        #expect(
            PeerProcess.parsePid(fdinfo: "pos:\t0\nflags:\t02000002\nmnt_id:\t15\nPid:\t4242\nNSpid:\t4242\n") == 4242)
        #expect(PeerProcess.parsePid(fdinfo: "Pid:\t-1\n") == -1)
        #expect(PeerProcess.parsePid(fdinfo: "pos:\t0\n") == nil)
    }
}
