// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthCore
import LocalAuthProtocol
import LocalAuthTesting
import Testing

/// ADR 0008, "Counted at the touch": a finger attempt is written when the reader reports the
/// finger, not when the wait for it begins. The real daemon on libfprint's virtual device, killed
/// with SIGKILL in the middle of a verify and started again on the same state directory.
@Suite(.onOwnThreads, .timeLimit(.minutes(3)))
struct TouchCountingTests {
    static let biometrics = EvaluateOptions(
        policy: .deviceOwnerAuthenticationWithBiometrics, user: "alice", service: "test", tries: 1,
        timeoutMs: 30_000)

    /// Sends a verify and returns once the daemon asked for the finger: the reader is waiting.
    static func verifyWaitingForAFinger(_ d: DaemonHarness) throws -> DaemonConnection {
        let c = try d.connect()
        try c.send(Request.evaluate(biometrics).frame)
        while true {
            switch try c.receive(deadline: DaemonConnection.now() + 30_000) {
            case .event(let e) where e.kind == .placeFinger: return c
            case .result(let r): throw HarnessError.setup("the verify ended before the prompt: \(r.message)")
            default: continue
            }
        }
    }

    /// Alice's record as the store loads it from a copy of the live state directory (the copy is
    /// what a `kill -9` at that moment leaves: the page cache outlives the process).
    static func stored(_ d: DaemonHarness, copy: String) -> UserAuthState? {
        KillPointTests.copyState(d.stateDirectory, to: copy)
        return KillPointTests.load(copy, context: copy)?.state
    }

    /// Five crashes while a verify waits for a finger that never comes: before, each left its
    /// attempt counted (4 kills → accepted, 5 kills → "Too many attempts").
    @Test func evaluate_whenKilledFiveTimesWaitingForAFinger_countsNothingAndTheFingerIsAccepted() async throws {
        let d = try await DaemonHarness.withAlicesFinger()
        for _ in 1...5 {
            // The client stays connected: the daemon dies waiting, not cancelled.
            let c = try Self.verifyWaitingForAFinger(d)
            withExtendedLifetime(c) { d.kill9() }
            try d.start()
        }
        let (can, _) = try d.perform(.canEvaluate(policy: .deviceOwnerAuthenticationWithBiometrics, user: "alice"))
        #expect(can.isSuccess, "\(can.message)")
        try d.simulate("touch", "alice-1")
        let (r, _) = try d.perform(.evaluate(Self.biometrics))
        #expect(r.isSuccess, "\(r.message)")
    }

    /// The opposite: a finger on the reader (`FINGER 1`: the reader reports it, its answer has not
    /// come) is counted on disk at once; a kill then keeps it, and five such touches lock.
    @Test func evaluate_whenKilledAfterEachTouchBeforeItsAnswer_countsEveryTouchAndLocks() async throws {
        let d = try DaemonHarness()
        let work = try TemporaryDirectory.make("la-touch")
        defer { TemporaryDirectory.remove(work) }
        try await d.enroll(user: "alice", printID: "alice-1")
        var copies = 0
        for touch in 1...5 {
            let c = try Self.verifyWaitingForAFinger(d)
            try d.simulate("finger-on")
            let deadline = Date().addingTimeInterval(10)
            var failures = -1
            repeat {
                copies += 1
                failures = Self.stored(d, copy: "\(work)/copy-\(copies)")?.fingerFailures ?? -1
                if failures == touch { break }
                usleep(20_000)
            } while Date() < deadline
            #expect(failures == touch, "touch \(touch): the count on disk is \(failures)")
            withExtendedLifetime(c) { d.kill9() }
            try d.start()
        }
        let (can, _) = try d.perform(.canEvaluate(policy: .deviceOwnerAuthenticationWithBiometrics, user: "alice"))
        #expect(can.resultCode == .biometryLockout, "\(can.message)")
        // The right finger is no longer asked for.
        try d.simulate("touch", "alice-1")
        let (r, _) = try d.perform(.evaluate(Self.biometrics))
        #expect(r.resultCode == .biometryLockout, "\(r.message)")
    }
}
