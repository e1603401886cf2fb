// SPDX-License-Identifier: Apache-2.0

import LocalAuthCore
import LocalAuthProtocol
import Testing

/// Rows P1–P14 of docs/policy.md: the passcode, its counters and delays, and the clock.
@Suite struct PasscodeTests {
    /// A user who has just typed the `failures`-th wrong passcode at `t0`.
    func delayed(failures: Int, untilMs: Int64) -> UserAuthState {
        var state = withPasscode
        state.passcodeFailures = failures
        state.passcodeLockedUntilMs = untilMs
        state.lastSeenMs = t0
        return state
    }

    @Test func evaluate_whenPasscodeCorrect_resetsAllCountersBeforeSuccess() {
        var state = withPasscode
        state.fingerFailures = 5
        state.biometryLocked = true
        state.passcodeFailures = 3
        var evaluator = awaitingPasscode(state: state)
        let out = evaluator.handle(.passcodeEntered(correct: true, attemptToken: "a"), nowMs: t0 + 5000)
        var reset = withPasscode
        reset.lastSeenMs = t0 + 5000
        #expect(
            out == [
                .persist(reset), .recordSuccess,
                .finish(
                    Result(
                        .success, "Authenticated with passcode", extra: [Field(tag: .domainState, value: [1, 2, 3])])),
            ])
    }

    @Test func evaluate_whenPasscodeWrong_persistsBeforePasscodeWrong() {
        var evaluator = awaitingPasscode()
        let out = evaluator.handle(.passcodeEntered(correct: false, attemptToken: "a"), nowMs: t0)
        var expected = withPasscode
        expected.passcodeFailures = 1
        expected.lastSeenMs = t0
        #expect(out == [.persist(expected), .event(Event(.passcodeWrong, "Wrong passcode"))])
        #expect(evaluator.phase == .awaitingPasscode)
    }

    @Test func evaluate_whenSameWrongPasscodeTwice_countsOnce() {
        var evaluator = awaitingPasscode()
        _ = evaluator.handle(.passcodeEntered(correct: false, attemptToken: "a"), nowMs: t0)
        let again = evaluator.handle(.passcodeEntered(correct: false, attemptToken: "a"), nowMs: t0)
        #expect(again == [.event(Event(.passcodeWrong, "Wrong passcode"))])
        #expect(evaluator.state.passcodeFailures == 1)
        _ = evaluator.handle(.passcodeEntered(correct: false, attemptToken: "b"), nowMs: t0)
        #expect(evaluator.state.passcodeFailures == 2)
    }

    @Test func evaluate_whenSixthPasscodeWrong_delaysOneMinute() {
        var state = withPasscode
        state.passcodeFailures = 5
        var evaluator = awaitingPasscode(state: state)
        let out = evaluator.handle(.passcodeEntered(correct: false, attemptToken: "a"), nowMs: t0)
        let persisted = delayed(failures: 6, untilMs: t0 + 60_000)
        #expect(
            out == [
                .persist(persisted),
                .event(Event(.passcodeWrong, "Passcode locked; try again in 1 minute", delayMs: 60_000)),
            ])
        #expect(!evaluator.isFinished)
    }

    @Test func evaluate_passcodeDelays_escalateAcrossEvaluations() {
        // Each evaluation starts once the previous delay is over and types one new wrong passcode.
        var state = delayed(failures: 5, untilMs: 0)
        var now = t0
        var delays: [Int64] = []
        for _ in 0..<5 {
            var evaluator = awaitingPasscode(state: state, at: now, timeoutMs: 300_000)
            _ = evaluator.handle(.passcodeEntered(correct: false, attemptToken: "x"), nowMs: now)
            state = evaluator.state
            delays.append(state.passcodeLockedUntilMs - now)
            now = state.passcodeLockedUntilMs
        }
        #expect(delays == [60_000, 300_000, 900_000, 3_600_000, 3_600_000])
        #expect(state.passcodeFailures == 10)
    }

    @Test func evaluate_whenDelayOutlastsRequest_failsAuthenticationFailedWithTime() {
        var state = withPasscode
        state.passcodeFailures = 6
        state.passcodeLockedUntilMs = 0
        var evaluator = awaitingPasscode(state: state, timeoutMs: 60_000)
        let out = evaluator.handle(.passcodeEntered(correct: false, attemptToken: "a"), nowMs: t0)
        let message = "Passcode locked; try again in 5 minutes"
        #expect(precedes(out.persistIndex, out.firstIndex(ofEvent: .passcodeWrong)))
        #expect(out.events == [Event(.passcodeWrong, message, delayMs: 300_000)])
        #expect(out.result == Result(.authenticationFailed, message))
        #expect(evaluator.isFinished)
    }

    @Test func evaluate_whenStartingDuringDelay_announcesDelay() {
        let state = delayed(failures: 6, untilMs: t0 + 60_000)
        let (_, out) = started(
            options(.deviceOwnerAuthentication, timeoutMs: 120_000), state: state, facts: noFinger, at: t0 + 15_000)
        #expect(
            out == [
                .requestPasscode,
                .event(
                    Event(
                        .passcodeNeeded, "Enter your passcode — Passcode locked; try again in 45 seconds",
                        delayMs: 45_000)),
            ])
    }

    @Test func evaluate_whenStartingDuringLongerDelay_failsAuthenticationFailedWithTime() {
        let state = delayed(failures: 7, untilMs: t0 + 300_000)
        let (evaluator, out) = started(options(.deviceOwnerAuthentication), state: state, facts: noFinger)
        #expect(out == [.finish(Result(.authenticationFailed, "Passcode locked; try again in 5 minutes"))])
        #expect(evaluator.isFinished)
    }

    @Test(arguments: [true, false])
    func evaluate_duringDelay_refusesPasscodeUncounted(correct: Bool) {
        var evaluator = awaitingPasscode(state: delayed(failures: 6, untilMs: t0 + 60_000))
        let out = evaluator.handle(.passcodeEntered(correct: correct, attemptToken: "a"), nowMs: t0 + 10_000)
        #expect(out == [.event(Event(.passcodeWrong, "Passcode locked; try again in 50 seconds", delayMs: 50_000))])
        #expect(evaluator.state.passcodeFailures == 6)
        #expect(evaluator.passcodeDelayRemainingMs(nowMs: t0 + 10_000) == 50_000)
    }

    @Test func evaluate_whenDelayOver_acceptsPasscode() {
        var evaluator = awaitingPasscode(state: delayed(failures: 6, untilMs: t0 + 60_000))
        let out = evaluator.handle(.passcodeEntered(correct: true, attemptToken: "a"), nowMs: t0 + 60_000)
        #expect(out.code == .success)
        #expect(out.persisted.last?.passcodeFailures == 0)
        #expect(out.persisted.last?.passcodeLockedUntilMs == 0)
    }

    @Test func evaluate_whenClockGoesBackwards_keepsDelay() {
        let hourMs: Int64 = 3_600_000
        let state = delayed(failures: 6, untilMs: t0 + 60_000)
        let (_, start) = started(
            options(.deviceOwnerAuthentication, timeoutMs: 300_000), state: state, facts: noFinger, at: t0 - hourMs)
        #expect(start.events.last?.delayMs == 60_000)
        // A real minute later the clock still reads an hour early: the passcode is still refused.
        var evaluator = awaitingPasscode(state: state, at: t0 - hourMs)
        let out = evaluator.handle(.passcodeEntered(correct: true, attemptToken: "a"), nowMs: t0 - hourMs + 60_000)
        #expect(out.code == nil)
        #expect(out.eventKinds == [.passcodeWrong])
        #expect(evaluator.state.lastSeenMs == t0)
    }

    @Test func evaluate_whenClockGoesBackwards_delayStartsFromLatestReading() {
        var state = withPasscode
        state.passcodeFailures = 5
        state.lastSeenMs = t0
        var evaluator = awaitingPasscode(state: state, at: t0 - 3_600_000)
        let out = evaluator.handle(.passcodeEntered(correct: false, attemptToken: "a"), nowMs: t0 - 3_600_000)
        #expect(out.persisted.last?.passcodeLockedUntilMs == t0 + 60_000)
        #expect(out.persisted.last?.lastSeenMs == t0)
    }

    @Test func evaluate_whenPasscodeArrivesWhileScanning_ignoresIt() {
        var (evaluator, _) = started(options(.deviceOwnerAuthentication))
        #expect(evaluator.handle(.passcodeEntered(correct: true, attemptToken: "a"), nowMs: t0).isEmpty)
        #expect(evaluator.handle(.passcodeEntered(correct: false, attemptToken: "b"), nowMs: t0).isEmpty)
        #expect(evaluator.state.passcodeFailures == 0)
        #expect(evaluator.phase == .scanning)
    }

    @Test func evaluate_whenTimedOutAwaitingPasscode_failsSystemCancel() {
        var evaluator = awaitingPasscode()
        let out = evaluator.handle(.timedOut, nowMs: t0 + 300_000)
        #expect(out == [.finish(Result(.systemCancel, "Timed out waiting for the passcode"))])
    }

    @Test func evaluate_whenCancelledAwaitingPasscode_isNotCounted() {
        var evaluator = awaitingPasscode()
        let out = evaluator.handle(.cancelled(.userCancel), nowMs: t0)
        #expect(out == [.finish(Result(.userCancel, "Cancelled by the user"))])
    }

    @Test func evaluate_everyBatch_persistsBeforeItsFirstReveal() {
        // A crash between two outputs never loses a failure: in every batch, the persist (if
        // any) precedes every event, recordSuccess and finish.
        var state = withPasscode
        state.fingerFailures = 2
        state.passcodeFailures = 4
        var (evaluator, first) = started(
            options(.deviceOwnerAuthentication, tries: 5, timeoutMs: 300_000), state: state)
        var batches = [first]
        var now = t0
        for _ in 0..<3 { batches.append(evaluator.handle(.fingerNotMatched, nowMs: now)) }
        for token in ["a", "b"] {
            now += 61_000
            batches.append(evaluator.handle(.passcodeEntered(correct: false, attemptToken: token), nowMs: now))
        }
        now += 61_000
        batches.append(evaluator.handle(.passcodeEntered(correct: true, attemptToken: "d"), nowMs: now))
        #expect(batches.filter(\.persistsAnything).count == 6)
        for batch in batches {
            guard let persist = batch.lastIndex(where: \.isPersist) else { continue }
            let reveals = batch.indices.filter { batch[$0].isReveal }
            #expect(reveals.allSatisfy { $0 > persist }, "\(batch)")
        }
        #expect(batches.last?.code == .success)
    }
}

extension PolicyOutput {
    fileprivate var isPersist: Bool {
        if case .persist = self { true } else { false }
    }
    fileprivate var isReveal: Bool {
        switch self {
        case .event, .finish, .recordSuccess: true
        default: false
        }
    }
}
