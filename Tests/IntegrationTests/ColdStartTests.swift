// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthProtocol
import LocalAuthTesting
import Testing

/// A cold start answers what needs no reader before libfprint has enumerated (docs/performance.md):
/// the debug build holds libfprint's start on a FIFO (`LOCALAUTHD_DEBUG_HOLD_LIBFPRINT_FIFO`) and
/// the real daemon is asked while it waits.
@Suite(.onOwnThreads, .timeLimit(.minutes(1)))
struct ColdStartTests {
    @Test func list_whileLibfprintHasNotEnumerated_isAnsweredFromTheStore() async throws {
        let first = try DaemonHarness()
        try await first.enroll(user: "alice", printID: "alice-1")
        first.stop()
        let fifo = first.directory + "/hold"
        #expect(mkfifo(fifo, 0o600) == 0)
        // Before the change the socket was bound only after the enumeration: this start timed out.
        let d = try DaemonHarness(
            stateDirectory: first.stateDirectory, environment: ["LOCALAUTHD_DEBUG_HOLD_LIBFPRINT_FIFO": fifo])
        var released = false
        defer { if !released { releaseHold(fifo) } }

        let list = try d.ctl(["list", "--user", "alice"])
        #expect(list.status == 0, "\(list.err)")
        #expect(list.out.contains("right-index-finger"), "\(list.out)")
        let passcode = try d.ctl(["passcode", "set", "--user", "alice"], stdin: "1234\n")
        #expect(passcode.status == 0, "\(passcode.err)")

        // What needs the reader waits for it, and is answered once libfprint is up.
        let waiting = try d.connect()
        try waiting.send(Request.devices.frame)
        #expect(throws: (any Error).self) { _ = try waiting.receive(deadline: DaemonConnection.now() + 300) }
        released = releaseHold(fifo)
        #expect(released)
        let devices = try d.ctl(["devices"])
        #expect(devices.status == 0)
        #expect(devices.out.contains("Virtual device"), "\(devices.out)")
        let after = try d.ctl(["list", "--user", "alice"])
        #expect(after.out.contains("right-index-finger"))
    }

    /// A verify that arrives before libfprint has enumerated (the first request after a cold start)
    /// is not refused for want of a reader: it waits for the enumeration, asks for the finger once
    /// the reader is there, and the enrolled finger matches.
    @Test func evaluate_beforeLibfprintHasEnumerated_waitsForTheReaderAndMatches() async throws {
        let first = try DaemonHarness()
        try await first.enroll(user: "alice", printID: "alice-1")
        first.stop()
        let fifo = first.directory + "/hold"
        #expect(mkfifo(fifo, 0o600) == 0)
        let d = try DaemonHarness(
            stateDirectory: first.stateDirectory, environment: ["LOCALAUTHD_DEBUG_HOLD_LIBFPRINT_FIFO": fifo])
        var released = false
        defer { if !released { releaseHold(fifo) } }

        let verify = try d.connect()
        try verify.send(Request.evaluate(TouchCountingTests.biometrics).frame)
        // Held: no answer and no prompt yet, while what needs no reader is answered.
        #expect(throws: (any Error).self) { _ = try verify.receive(deadline: DaemonConnection.now() + 300) }
        let list = try d.ctl(["list", "--user", "alice"])
        #expect(list.status == 0 && list.out.contains("right-index-finger"), "\(list.out)\(list.err)")
        released = releaseHold(fifo)
        #expect(released)
        var result: RequestResult?
        while result == nil {
            switch try verify.receive(deadline: DaemonConnection.now() + 10_000) {
            case .event(let e) where e.kind == .placeFinger: try d.simulate("touch", "alice-1")
            case .result(let r): result = r
            default: continue
            }
        }
        #expect(result?.isSuccess == true, "\(result?.message ?? "")")
    }

    /// A temporary file a crash left in `users/` itself is not looked for while the daemon starts
    /// (listing `users/` made the cold start grow with the accounts, docs/performance.md): with
    /// libfprint held, the daemon answers without having listed `users/` (its access time, which
    /// a listing moves, is untouched) and the file is still there; a second after the daemon serves
    /// with its reader up, it removes the file and says so (or at its stop, when that is sooner).
    /// Until then it is never an account.
    @Test func start_answersBeforeListingUsers_thenRemovesATemporaryFileACrashLeftThere() async throws {
        let first = try DaemonHarness()
        try await first.enroll(user: "alice", printID: "alice-1")
        first.stop()
        let users = first.stateDirectory + "/users"
        let leftover = users + "/.tmp-state-0123456789abcdef"
        let fd = open(leftover, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        #expect(fd >= 0 && write(fd, "torn", 4) == 4)
        close(fd)
        // An access time older than the modification time: the next listing moves it (relatime).
        let omit = (1 << 30) - 2  // UTIME_OMIT, a macro Swift does not import
        let times = [timespec(tv_sec: 1, tv_nsec: 0), timespec(tv_sec: 0, tv_nsec: omit)]
        #expect(utimensat(AT_FDCWD, users, times, 0) == 0)
        let fifo = first.directory + "/hold"
        #expect(mkfifo(fifo, 0o600) == 0)
        let d = try DaemonHarness(
            stateDirectory: first.stateDirectory, environment: ["LOCALAUTHD_DEBUG_HOLD_LIBFPRINT_FIFO": fifo])
        var released = false
        defer { if !released { releaseHold(fifo) } }

        let list = try d.ctl(["list", "--user", "alice"])
        #expect(list.status == 0 && list.out.contains("right-index-finger"), "\(list.out)\(list.err)")
        // Before the change the store's open removed it, listing users/.
        #expect(access(leftover, F_OK) == 0, "removed before the daemon served")
        #expect(Self.accessTime(users) == 1, "users/ was listed before the daemon served")

        released = releaseHold(fifo)
        #expect(released)
        // Removed, then users/ synced, then said: waited for until said.
        let said = "removed temporary files left in \(users) by an interrupted write"
        for _ in 0..<1000 where !d.daemonLog.contains(said) { usleep(10_000) }
        #expect(d.daemonLog.contains(said), "\(d.daemonLog)")
        #expect(access(leftover, F_OK) != 0, "the daemon did not remove \(leftover)")
        let after = try d.ctl(["list", "--user", "alice"])
        #expect(after.status == 0 && after.out.contains("right-index-finger"), "\(after.out)\(after.err)")

        // A daemon stopped within its first second sweeps at its stop.
        #expect(d.stop() == 0)
        try d.start()
        #expect(releaseHold(fifo))
        for _ in 0..<1000 where !d.daemonLog.contains("ready on") { usleep(10_000) }
        let second = users + "/.tmp-state-fedcba9876543210"
        let fd2 = open(second, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        #expect(fd2 >= 0)
        close(fd2)
        #expect(d.stop() == 0)
        #expect(access(second, F_OK) != 0, "the stop did not remove \(second)")
    }

    private static func accessTime(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_atim.tv_sec : -1
    }

    /// Lets the held libfprint start: a byte for the daemon waiting on the FIFO (within 5 s).
    @discardableResult
    private func releaseHold(_ fifo: String) -> Bool {
        for _ in 0..<500 {
            let fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if fd < 0 {
                usleep(10_000)  // ENXIO: the daemon does not wait on it (yet)
                continue
            }
            var byte: UInt8 = 1
            _ = write(fd, &byte, 1)
            close(fd)
            return true
        }
        return false
    }
}
