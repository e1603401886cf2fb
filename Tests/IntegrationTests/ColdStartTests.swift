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
