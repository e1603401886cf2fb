// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthProtocol
import LocalAuthTesting
import Testing

/// Issue 13, M1, through the real daemon: every request ends by its own deadline, also while it
/// waits for its account's turn, and one account cannot keep the reader from everyone else.
@Suite(.onOwnThreads, .serialized, .timeLimit(.minutes(3)))
struct ReaderShareTests {
    static let user = "nobody"

    static func owner(timeoutMs: Int64) -> EvaluateOptions {
        EvaluateOptions(
            policy: .deviceOwnerAuthentication, user: user, service: "queue-test", flags: [.passcodeCapable],
            tries: 1, timeoutMs: timeoutMs)
    }

    @Test func request_waitingBehindItsAccountsOtherRequests_endsByItsOwnDeadline() async throws {
        let d = try DaemonHarness()
        // No finger: each owner-policy request asks for the passcode, holds the account's turn and
        // never gets an answer (the red team's 40 pending `su` held the queue the same way).
        #expect(try d.perform(.passcodeSet(user: Self.user, passcode: "never typed", oldPasscode: nil)).0.isSuccess)
        var pending: [DaemonConnection] = []
        for _ in 0..<40 {
            let c = try d.connect()
            try c.send(Request.evaluate(Self.owner(timeoutMs: 60_000)).frame)
            pending.append(c)
        }
        guard case .event(let asked) = try pending[0].receive(deadline: DaemonConnection.now() + 30_000) else {
            Issue.record("the first request asked for nothing")
            return
        }
        #expect(asked.kind == .passcodeNeeded)
        let started = Date()
        let (late, _) = try d.perform(.evaluate(Self.owner(timeoutMs: 3000)))
        let seconds = Date().timeIntervalSince(started)
        print("a 3 s request behind 40 pending ones of its account answered after \(seconds) s")
        #expect(late.resultCode == .systemCancel, "\(late.message)")
        #expect(late.message == "Timed out waiting for another request of nobody to finish", "\(late.message)")
        #expect(seconds >= 2.9 && seconds < 4.5, "answered after \(seconds) s")
        for c in pending { c.interrupt() }
    }

    @Test func reader_oneAccountsShare_endsItsHold_andAnotherAccountGetsTheReader() async throws {
        let path = try ConfigurationIntegrationTests.write("reader-share-seconds = 5\n")
        defer { unlink(path) }
        let d = try DaemonHarness(extraArguments: ["--config", path, "--linger-ms", "-1"])
        try await d.enroll(user: Self.user, printID: "nobody")
        try await d.enroll(user: "daemon", printID: "daemon")
        // nobody's request holds the reader (30 s timeout, nobody touches it): its share ends it.
        let started = Date()
        let (held, _) = try d.startEvaluation(user: Self.user)
        let ended = try held.receiveResult()
        let seconds = Date().timeIntervalSince(started)
        print("a request past its account's 5 s share of the reader ended after \(seconds) s")
        #expect(ended.resultCode == .biometryNotAvailable, "\(ended.message)")
        #expect(ended.message.contains("nobody's requests have had the reader for 5 seconds"), "\(ended.message)")
        #expect(seconds >= 4.9 && seconds < 7, "held for \(seconds) s")
        // At once again for nobody: told when the reader is theirs again, without a prompt.
        let (again, events) = try d.perform(
            .evaluate(
                EvaluateOptions(
                    policy: .deviceOwnerAuthenticationWithBiometrics, user: Self.user, tries: 1, timeoutMs: 5000)))
        #expect(again.resultCode == .biometryNotAvailable && events.isEmpty, "\(again.message)")
        #expect(again.message.contains("it is free for others until"), "\(again.message)")
        // Another account's request gets the reader meanwhile.
        try d.simulate("touch", "daemon")
        let (other, _) = try d.perform(
            .evaluate(
                EvaluateOptions(
                    policy: .deviceOwnerAuthenticationWithBiometrics, user: "daemon", tries: 1, timeoutMs: 5000)))
        #expect(other.isSuccess, "\(other.message)")
    }
}

/// Issue 13, L2: libfprint's `virtual_device` cannot identify. Before, only the first enrolled finger
/// was ever verified while the prompt said "a finger"; now the fingers are tried in turn, each named.
@Suite(.onOwnThreads, .timeLimit(.minutes(2)))
struct NoIdentifyReaderTests {
    @Test func verify_onAReaderWithoutIdentify_triesEachEnrolledFingerInTurnAndSaysWhich() async throws {
        let d = try DaemonHarness(extraArguments: ["--linger-ms", "-1"])
        try await d.enroll(user: "alice", finger: .rightIndex, printID: "alice-right")
        try await d.enroll(user: "alice", finger: .leftIndex, printID: "alice-left")
        // The left finger, twice: the first attempt reads the right index, the second the left.
        try d.simulate("touch", "alice-left")
        try d.simulate("touch", "alice-left")
        let (r, events) = try d.perform(
            .evaluate(
                EvaluateOptions(
                    policy: .deviceOwnerAuthenticationWithBiometrics, user: "alice", fallbackTitle: "", tries: 2,
                    timeoutMs: 10_000)))
        let prompts = events.filter { $0.kind == .placeFinger }.map(\.message)
        #expect(prompts.count == 2 && prompts[0].hasPrefix("Place your right index finger"), "\(prompts)")
        #expect(prompts.count == 2 && prompts[1].hasPrefix("Place your left index finger"), "\(prompts)")
        #expect(r.isSuccess, "\(r.message)")
        #expect(r.fields.string(.finger) == "left-index-finger")
    }
}
