// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthProtocol
import Testing

/// Issue 13, M1, through the real daemon: every request ends by its own deadline, also while it
/// waits for its account's turn, and one account cannot keep the reader from everyone else.
@Suite(.serialized, .timeLimit(.minutes(3)))
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
        guard case .event(let asked) = try pending[0].receive(deadline: DaemonConnection.now() + 5000) else {
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
}
