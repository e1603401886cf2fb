// SPDX-License-Identifier: Apache-2.0

import LocalAuthCore
import LocalAuthProtocol
import Testing

/// Rows P of docs/policy.md: the passcode, its counters and delays, and the clock. A passcode is
/// counted on disk before it is hashed (`enter` feeds `.passcodeEntered`, then `.passcodeChecked`
/// once the evaluator asked for the check).
@Suite struct PasscodeTests {
    /// A user who has just typed the `failures`-th wrong passcode at `t0`.
    func delayed(failures: Int, untilMs: Int64) -> UserAuthState {
        var state = withPasscode
        state.passcodeFailures = failures
        state.passcodeLockedUntilMs = untilMs
        state.lastSeenMs = t0
        return state
    }

    func counted(_ state: UserAuthState, failures: Int, untilMs: Int64 = 0, at nowMs: Int64) -> UserAuthState {
        var s = state.observed(nowMs)
        s.passcodeFailures = failures
        s.passcodeLockedUntilMs = untilMs
        return s
    }

    @Test func evaluate_whenPasscodeCorrect_resetsAllCountersBeforeSuccess() {
        var state = withPasscode
        state.fingerFailures = 5
        state.biometryLocked = true
        state.passcodeFailures = 3
        var evaluator = awaitingPasscode(state: state)
        let out = enter(&evaluator, correct: true, at: t0 + 5000)
        var reset = withPasscode
        reset.lastSeenMs = t0 + 5000
        #expect(
            out == [
                persist(counted(state, failures: 4, at: t0 + 5000)), .checkPasscode, persist(reset),
                .recordUse(.passcode),
                .recordSuccess,
                .finish(Decision(.success, .authenticatedWithPasscode, domainState: [1, 2, 3])),
            ])
        #expect(out.result?.message == "Authenticated with passcode")
    }

    @Test func evaluate_whenPasscodeWrong_isCountedBeforeItIsHashedAndAskedAgain() {
        var evaluator = awaitingPasscode()
        let out = enter(&evaluator, correct: false, token: "a")
        #expect(
            out == [
                persist(counted(withPasscode, failures: 1, at: t0)), .checkPasscode,
                .notify(Notice(.passcodeWrong, .wrongPasscode)),
                .requestPasscode, .notify(Notice(.passcodeNeeded, .enterPasscode)),
            ])
        #expect(out.events.first?.message == "Wrong passcode")
        #expect(evaluator.phase == .awaitingPasscode)
    }

    @Test func evaluate_whenSameWrongPasscodeTwice_countsOnce() {
        var evaluator = awaitingPasscode()
        _ = enter(&evaluator, correct: false, token: "a")
        let again = enter(&evaluator, correct: false, token: "a")
        // Counted before the hash like any attempt, then given back once the hash shows a repeat.
        #expect(again.persisted.map(\.passcodeFailures) == [2, 1])
        #expect(again.contains(.persist(counted(withPasscode, failures: 1, at: t0), ifItFails: .goOn)))
        #expect(again.eventKinds == [.passcodeWrong, .passcodeNeeded])
        #expect(evaluator.state.passcodeFailures == 1)
        _ = enter(&evaluator, correct: false, token: "b")
        #expect(evaluator.state.passcodeFailures == 2)
    }

    @Test func evaluate_whenSixthPasscodeWrong_delaysOneMinute() {
        var state = withPasscode
        state.passcodeFailures = 5
        var evaluator = awaitingPasscode(state: state)
        let out = enter(&evaluator, correct: false, token: "a")
        #expect(
            out == [
                persist(delayed(failures: 6, untilMs: t0 + 60_000)), .checkPasscode,
                .notify(Notice(.passcodeWrong, .passcodeLocked(remainingMs: 60_000), delayMs: 60_000)),
                .requestPasscode,
                .notify(
                    Notice(
                        .passcodeNeeded, .both(.enterPasscode, .passcodeLocked(remainingMs: 60_000)), delayMs: 60_000)),
            ])
        #expect(out.events.first?.message == "Passcode locked; try again in 1 minute")
        #expect(!evaluator.isFinished)
    }

    @Test func evaluate_passcodeDelays_escalateAcrossEvaluations() {
        // Each evaluation starts once the previous delay is over and types one new wrong passcode.
        var state = delayed(failures: 5, untilMs: 0)
        var now = t0
        var delays: [Int64] = []
        for _ in 0..<5 {
            var evaluator = awaitingPasscode(state: state, at: now, timeoutMs: 300_000)
            _ = enter(&evaluator, correct: false, token: "x", at: now)
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
        let out = enter(&evaluator, correct: false, token: "a")
        let locked = Phrase.passcodeLocked(remainingMs: 300_000)
        #expect(precedes(out.persistIndex, out.firstIndex(ofEvent: .passcodeWrong)))
        #expect(out.events == [Notice(.passcodeWrong, locked, delayMs: 300_000)])
        #expect(out.result == Decision(.authenticationFailed, locked))
        #expect(out.result?.message == "Passcode locked; try again in 5 minutes")
        #expect(evaluator.isFinished)
    }

    @Test func evaluate_whenStartingDuringDelay_announcesDelay() {
        let state = delayed(failures: 6, untilMs: t0 + 60_000)
        let (_, out) = started(
            options(.deviceOwnerAuthentication, timeoutMs: 120_000), state: state, facts: noFinger, at: t0 + 15_000)
        #expect(
            out == [
                .requestPasscode,
                .notify(
                    Notice(
                        .passcodeNeeded, .both(.enterPasscode, .passcodeLocked(remainingMs: 45_000)), delayMs: 45_000)),
            ])
        #expect(out.events.first?.message == "Enter your passcode — Passcode locked; try again in 45 seconds")
    }

    @Test func evaluate_whenStartingDuringLongerDelay_failsAuthenticationFailedWithTime() {
        let state = delayed(failures: 7, untilMs: t0 + 300_000)
        let (evaluator, out) = started(options(.deviceOwnerAuthentication), state: state, facts: noFinger)
        #expect(out == [.finish(Decision(.authenticationFailed, .passcodeLocked(remainingMs: 300_000)))])
        #expect(out.result?.message == "Passcode locked; try again in 5 minutes")
        #expect(evaluator.isFinished)
    }

    @Test(arguments: [true, false])
    func evaluate_duringDelay_refusesPasscodeUncountedAndUnhashed(correct: Bool) {
        var evaluator = awaitingPasscode(state: delayed(failures: 6, untilMs: t0 + 60_000))
        let out = enter(&evaluator, correct: correct, token: "a", at: t0 + 10_000)
        #expect(!out.contains(.checkPasscode))
        #expect(!out.persistsAnything)
        #expect(out.events.first == Notice(.passcodeWrong, .passcodeLocked(remainingMs: 50_000), delayMs: 50_000))
        #expect(out.events.first?.message == "Passcode locked; try again in 50 seconds")
        #expect(evaluator.state.passcodeFailures == 6)
        #expect(evaluator.passcodeDelayRemainingMs(nowMs: t0 + 10_000) == 50_000)
    }

    @Test func evaluate_whenDelayOver_acceptsPasscode() {
        var evaluator = awaitingPasscode(state: delayed(failures: 6, untilMs: t0 + 60_000))
        let out = enter(&evaluator, correct: true, token: "a", at: t0 + 60_000)
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
        let out = enter(&evaluator, correct: true, token: "a", at: t0 - hourMs + 60_000)
        #expect(out.code == nil)
        #expect(out.eventKinds == [.passcodeWrong, .passcodeNeeded])
        #expect(evaluator.state.lastSeenMs == t0)
    }

    @Test func evaluate_whenClockGoesBackwards_delayStartsFromLatestReading() {
        var state = withPasscode
        state.passcodeFailures = 5
        state.lastSeenMs = t0
        var evaluator = awaitingPasscode(state: state, at: t0 - 3_600_000)
        let out = enter(&evaluator, correct: false, token: "a", at: t0 - 3_600_000)
        #expect(out.persisted.last?.passcodeLockedUntilMs == t0 + 60_000)
        #expect(out.persisted.last?.lastSeenMs == t0)
    }

    @Test func evaluate_whenPasscodeArrivesWhileScanning_ignoresIt() {
        var (evaluator, _) = started(options(.deviceOwnerAuthentication))
        #expect(evaluator.handle(.passcodeEntered, nowMs: t0).isEmpty)
        #expect(evaluator.handle(.passcodeChecked(correct: true, attemptToken: "a"), nowMs: t0).isEmpty)
        #expect(evaluator.state.passcodeFailures == 0)
        #expect(evaluator.phase == .scanning)
    }

    @Test func evaluate_whenTimedOutAwaitingPasscode_failsSystemCancel() {
        var evaluator = awaitingPasscode()
        let out = evaluator.handle(.timedOut, nowMs: t0 + 300_000)
        #expect(out == [.finish(Decision(.systemCancel, .timedOutWaitingForPasscode))])
        #expect(out.result?.message == "Timed out waiting for the passcode")
    }

    @Test func evaluate_whenCancelledAwaitingPasscode_isNotCounted() {
        var evaluator = awaitingPasscode()
        let out = evaluator.handle(.cancelled(.userCancel), nowMs: t0)
        #expect(out == [.finish(Decision(.userCancel, .cancelled(.userCancel)))])
        #expect(out.result?.message == "Cancelled by the user")
    }

    @Test func evaluate_neverRevealsAFailureOrASuccessBeforeItIsOnDisk() {
        // A crash after any output loses no counted failure and shows no success that is not on
        // disk: replaying every output in order, each reveal finds its count already written.
        var state = withPasscode
        state.fingerFailures = 2
        state.passcodeFailures = 4
        var (evaluator, first) = started(
            options(.deviceOwnerAuthentication, tries: 5, timeoutMs: 300_000), state: state)
        var outputs = first
        var now = t0
        // Touches reported and not: each miss is on disk before it is told.
        for touch in [true, false, true] {
            if touch { outputs += evaluator.handle(.fingerPresent, nowMs: now) }
            outputs += evaluator.handle(.fingerNotMatched, nowMs: now)
        }
        for token in ["a", "b"] {
            now += 61_000
            outputs += enter(&evaluator, correct: false, token: token, at: now)
        }
        now += 61_000
        outputs += enter(&evaluator, correct: true, token: "d", at: now)
        var disk = state
        var misses = 0
        var wrongPasscodes = 0
        for output in outputs {
            switch output {
            case .persist(let written, _): disk = written
            case .notify(let n) where n.kind == .noMatch:
                misses += 1
                #expect(disk.fingerFailures >= state.fingerFailures + misses, "miss \(misses) told before written")
            case .notify(let n) where n.kind == .biometryLocked: #expect(disk.biometryLocked)
            case .notify(let n) where n.kind == .passcodeWrong:
                wrongPasscodes += 1
                #expect(disk.passcodeFailures >= state.passcodeFailures + wrongPasscodes)
            case .checkPasscode:
                #expect(disk.passcodeFailures >= state.passcodeFailures + wrongPasscodes + 1, "hashed before counted")
            case .scanFinger:
                // Waiting for a finger counts nothing (ADR 0008): a crash during the wait leaves no count.
                #expect(disk.fingerFailures == state.fingerFailures + misses, "a wait counted")
            case .recordSuccess, .finish:
                #expect(disk.fingerFailures == 0 && disk.passcodeFailures == 0 && !disk.biometryLocked)
            default: break
            }
        }
        #expect(outputs.code == .success)
    }

    // MARK: H1 — a passcode that cannot be counted is refused unhashed

    @Test func evaluate_passcode_whenItsCountCannotBeWritten_rightAndWrongAreRefusedAlikeUnhashed() {
        var decisions: [Decision?] = []
        for _ in [true, false] {
            var evaluator = awaitingPasscode()
            let before = evaluator.handle(.passcodeEntered, nowMs: t0)
            #expect(before.first == persist(counted(withPasscode, failures: 1, at: t0)))
            // That write failed: the daemon never executed `.checkPasscode`, so nothing was hashed.
            let out = evaluator.handle(.recordFailed, nowMs: t0)
            decisions.append(out.result)
            #expect(!out.persistsAnything)
        }
        #expect(decisions[0] == Decision(.biometryNotAvailable, .attemptNotRecorded))
        #expect(decisions[0] == decisions[1])
    }

    @Test func evaluate_passcode_whenTheResetAfterACorrectOneCannotBeWritten_isRefusedAndStaysCounted() {
        var evaluator = awaitingPasscode()
        let out = enter(&evaluator, correct: true, token: "a")
        #expect(out.persisted.map(\.passcodeFailures) == [1, 0])
        // The reset failed: the count of 1 stays on disk and the success is never told.
        let refused = evaluator.handle(.recordFailed, nowMs: t0)
        #expect(refused == [.finish(Decision(.biometryNotAvailable, .attemptNotRecorded))])
    }
}
