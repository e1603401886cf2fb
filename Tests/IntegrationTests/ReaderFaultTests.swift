// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthProtocol
import LocalAuthTesting
import Testing

/// Promise 7 of docs/reliability.md: reader faults through the real daemon and libfprint's virtual
/// device. Unplugged mid-verify and mid-enrol, errors and retries injected (`ERROR`, `RETRY`), a
/// reader that never answers: the right LAError, no stuck claim, the next request works, and an
/// unplugged reader that comes back is used again.
@Suite(.onOwnThreads, .timeLimit(.minutes(3)))
struct ReaderFaultTests {
    static func biometrics(timeoutMs: Int64 = 20_000) -> EvaluateOptions {
        EvaluateOptions(
            policy: .deviceOwnerAuthenticationWithBiometrics, user: "alice", service: "test", tries: 1,
            timeoutMs: timeoutMs)
    }

    /// A request run on a thread of its own (the cooperative pool has two): `events` yields each
    /// event as it comes, `result` ends with the RESULT.
    final class Pending: @unchecked Sendable {
        let events: AsyncStream<Event>
        private let lock = NSLock()
        private var outcome: Result<RequestResult, Error>?
        /// When the RESULT arrived, read on the request's own thread (the test's task may be late).
        private(set) var finishedAt: Int64 = 0
        private var waiters: [CheckedContinuation<Result<RequestResult, Error>, Never>] = []

        init(_ d: DaemonHarness, _ request: Request) {
            let (events, feed) = AsyncStream.makeStream(of: Event.self)
            self.events = events
            let socket = d.socketPath
            Thread.detachNewThread { [self] in
                let r = Result {
                    try DaemonConnection(socketPath: socket, clientName: "fault").perform(request, timeoutMs: 60_000) {
                        feed.yield($0)
                        return nil
                    }
                }
                feed.finish()
                let now = DaemonConnection.now()
                lock.lock()
                finishedAt = now
                outcome = r
                let waiting = waiters
                waiters = []
                lock.unlock()
                for w in waiting { w.resume(returning: r) }
            }
        }

        /// Waits for the first event of `kind`; false if the request ended first.
        func waitFor(_ kind: EventKind) async -> Bool {
            for await e in events where e.kind == kind { return true }
            return false
        }

        func result() async throws -> RequestResult {
            let r = await withCheckedContinuation { c in
                lock.lock()
                if let outcome {
                    lock.unlock()
                    c.resume(returning: outcome)
                } else {
                    waiters.append(c)
                    lock.unlock()
                }
            }
            return try r.get()
        }
    }

    /// Sends one command to the virtual device's own socket (for words `simulate` does not offer).
    /// The device listens only once it is open, which may come just after the daemon's prompt:
    /// connecting is retried for up to 10 s.
    static func virtualDevice(_ d: DaemonHarness, _ command: String) throws {
        let path = d.stateDirectory + "/virtual-reader.socket"
        let deadline = Date().addingTimeInterval(10)
        while true {
            if let fd = UnixSocket.connect(path) {
                defer { close(fd) }
                _ = Array(command.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                shutdown(fd, Int32(SHUT_WR))
                var byte: UInt8 = 0
                while recv(fd, &byte, 1, 0) > 0 {}
                return
            }
            guard Date() < deadline else { throw HarnessError.setup("the virtual device does not listen") }
            usleep(20_000)
        }
    }

    /// Waits (up to 20 s) until the daemon reports a reader again.
    static func waitForReader(_ d: DaemonHarness) throws {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if try d.perform(.status(user: "alice")).0.fields.bool(.readerPresent) == true { return }
            usleep(50_000)
        }
        Issue.record("the reader did not come back")
    }

    /// The next request works: alice's finger, touched once it is asked for, matches at once.
    static func fingerMatches(_ d: DaemonHarness) throws {
        let start = DaemonConnection.now()
        let (r, _) = try d.perform(.evaluate(biometrics()), touching: "alice-1")
        #expect(r.isSuccess, "\(r.message)\n\(d.daemonLog)")
        #expect(DaemonConnection.now() - start < 5000, "the reader was still claimed")
    }

    @Test func unplug_midVerify_givesBiometryNotAvailable_andTheReturningReaderIsUsed() async throws {
        let d = try await DaemonHarness.withAlicesFinger()
        let verify = Pending(d, .evaluate(Self.biometrics()))
        #expect(await verify.waitFor(.placeFinger))
        let unplugged = DaemonConnection.now()
        try d.simulate("unplug")
        let r = try await verify.result()
        #expect(r.resultCode == .biometryNotAvailable, "\(r.message)")
        // Nothing counted against alice: an unplugged reader is not a wrong finger.
        #expect(try d.perform(.status(user: "alice")).0.fields.bool(.biometryLocked) == false)
        try Self.waitForReader(d)
        print(
            "unplug mid-verify: result after \(verify.finishedAt - unplugged) ms, reader back after \(DaemonConnection.now() - unplugged) ms"
        )
        try Self.fingerMatches(d)
    }

    @Test func unplug_midEnrol_givesBiometryNotAvailable_storesNothing_andEnrolWorksOnReturn() async throws {
        let d = try await DaemonHarness.withAlicesFinger()
        let enrol = Pending(d, .enroll(user: "alice", finger: .leftIndex))
        #expect(await enrol.waitFor(.placeFinger))
        try d.simulate("touch", "alice-2")
        try d.simulate("touch", "alice-2")
        try d.simulate("unplug")
        let r = try await enrol.result()
        #expect(r.resultCode == .biometryNotAvailable, "\(r.message)")
        #expect(try d.perform(.list(user: "alice")).0.fields.strings(.finger) == ["right-index-finger"])
        try Self.waitForReader(d)
        try await d.enroll(user: "alice", finger: .leftIndex, printID: "alice-2")
        #expect(
            try d.perform(.list(user: "alice")).0.fields.strings(.finger).sorted() == [
                "left-index-finger", "right-index-finger",
            ])
        try Self.fingerMatches(d)
    }

    @Test func error_midVerify_givesBiometryNotAvailable_countsNothing_andNextVerifyWorks() async throws {
        let d = try await DaemonHarness.withAlicesFinger()
        let verify = Pending(d, .evaluate(Self.biometrics()))
        #expect(await verify.waitFor(.placeFinger))
        try d.simulate("error", "5")  // FP_DEVICE_ERROR_PROTO
        let r = try await verify.result()
        #expect(r.resultCode == .biometryNotAvailable, "\(r.message)")
        #expect(r.message.contains("reader"), "\(r.message)")
        let (status, _) = try d.perform(.status(user: "alice"))
        #expect(status.fields.bool(.biometryLocked) == false)
        try Self.fingerMatches(d)
    }

    @Test func lateErrorAfterTheMatch_endsTheAnsweredScan_andNeverReachesTheNextRequest() async throws {
        // fprintd's test_verify_error_ignored_after_report, on the socket: the reader reports the
        // match, then an error. The answer goes out at the match and stands; the scan gets a second
        // to finish (EvaluationRun.finishGraceMs) and its late error changes nothing, neither this
        // answer nor the next request's.
        let d = try DaemonHarness(extraArguments: ["--linger-ms", "-1"])
        try await d.enroll(user: "alice", printID: "alice-1")
        // The reader stays open from the enrolment on: the device queues the commands, in order,
        // and the verify takes them all (the match, then SLEEP 0 keeps the operation going, then
        // its error). Sent during the verify behind a SLEEP 50 instead, they raced it: a test slower
        // than 50 ms between SLEEP and SCAN (load) let the verify end at the match, and the error
        // waited in the queue for the next request ("the fingerprint reader is busy"; 300 ms
        // between them failed every time).
        for command in ["SCAN alice-1", "SLEEP 0", "ERROR 4"] {  // 4: FP_DEVICE_ERROR_BUSY
            try Self.virtualDevice(d, command)
        }
        let verify = Pending(d, .evaluate(Self.biometrics()))
        #expect(await verify.waitFor(.placeFinger))
        let r = try await verify.result()
        #expect(r.isSuccess, "\(r.message)")
        try Self.fingerMatches(d)
    }

    /// Alice's enrolment under way: the daemon asked for the finger and the first touch is in.
    static func enrolmentAfterTheFirstTouch() async throws -> (DaemonHarness, Pending) {
        let d = try DaemonHarness()
        let enrol = Pending(d, .enroll(user: "alice", finger: .rightIndex))
        #expect(await enrol.waitFor(.placeFinger))
        try d.simulate("touch", "alice-1")
        return (d, enrol)
    }

    @Test func error_midEnrol_givesBiometryNotAvailable_storesNothing_andNextEnrolWorks() async throws {
        let (d, enrol) = try await Self.enrolmentAfterTheFirstTouch()
        try d.simulate("error", "0")  // FP_DEVICE_ERROR_GENERAL
        let r = try await enrol.result()
        #expect(r.resultCode == .biometryNotAvailable, "\(r.message)")
        #expect(try d.perform(.list(user: "alice")).0.fields.strings(.finger).isEmpty)
        try await d.enroll(user: "alice", printID: "alice-1")
        try Self.fingerMatches(d)
    }

    @Test func retry_midEnrol_sendsTheHint_andEnrolmentCompletes() async throws {
        let (d, enrol) = try await Self.enrolmentAfterTheFirstTouch()
        try d.simulate("retry", "1")  // FP_DEVICE_RETRY_TOO_SHORT
        #expect(await enrol.waitFor(.retry))
        for _ in 0..<4 { try d.simulate("touch", "alice-1") }
        let r = try await enrol.result()
        #expect(r.isSuccess, "\(r.message)")
        try Self.fingerMatches(d)
    }

    @Test func readerThatNeverAnswers_timesOutWithSystemCancel_countsNothing_andFreesTheReader() async throws {
        let d = try await DaemonHarness.withAlicesFinger()
        // No finger ever comes: the virtual device waits forever, the daemon's timeout ends it.
        let (r, _) = try d.perform(.evaluate(Self.biometrics(timeoutMs: 1000)))
        #expect(r.resultCode == .systemCancel, "\(r.message)")
        #expect(try d.perform(.status(user: "alice")).0.fields.bool(.biometryLocked) == false)
        try Self.fingerMatches(d)
    }

    @Test func readerThatHangs_inSleep_timesOut_andTheNextRequestWorks() async throws {
        // The reader stays open (and its socket listening) from the enrolment on, so the SLEEP is
        // queued before the verify whatever the load; the verify then finds the device asleep.
        let d = try DaemonHarness(extraArguments: ["--linger-ms", "-1"])
        try await d.enroll(user: "alice", printID: "alice-1")
        try Self.virtualDevice(d, "SLEEP 60000")  // the device stops answering for a minute
        let start = DaemonConnection.now()
        let verify = Pending(d, .evaluate(Self.biometrics(timeoutMs: 1000)))
        let r = try await verify.result()
        #expect(r.resultCode == .systemCancel, "\(r.message)")
        #expect(verify.finishedAt - start < 10_000, "the timeout did not end a hung reader's scan")
        try Self.fingerMatches(d)
    }
}
