// SPDX-License-Identifier: Apache-2.0

import LocalAuthCore
import LocalAuthProtocol
import Testing

/// Rows F of docs/policy.md: inputs while a finger is being scanned.
@Suite struct FingerTests {
    @Test func evaluate_whenFingerMatches_takesBackTheCountedTouchThenRecordsSuccessAndFinishes() {
        var (evaluator, _) = started(options())
        #expect(
            evaluator.handle(.fingerPresent, nowMs: t0 + 500) == [
                persist(withPasscode.withFingerFailures(1, at: t0 + 500))
            ])
        let out = evaluator.handle(.fingerMatched(finger: rightIndex), nowMs: t0 + 1000)
        var reset = withPasscode
        reset.lastSeenMs = t0 + 1000
        #expect(
            out == [
                persist(reset), .recordUse(.finger), .recordSuccess,
                .finish(Decision(.success, .authenticatedWithFinger, domainState: [1, 2, 3], finger: rightIndex)),
            ])
        #expect(out.result?.message == "Authenticated with fingerprint")
        #expect(evaluator.isFinished)
    }

    @Test func evaluate_whenFingerMatchesAfterFailures_resetsFailuresBeforeSuccess() {
        var state = withPasscode
        state.fingerFailures = 3
        var (evaluator, _) = started(options(), state: state)
        let out = evaluator.handle(.fingerMatched(finger: rightIndex), nowMs: t0 + 1000)
        #expect(out.persisted.map(\.fingerFailures) == [0])
        #expect(out.first.map { if case .persist = $0 { true } else { false } } == true)
        #expect(Array(out.dropFirst().prefix(2)) == [.recordUse(.finger), .recordSuccess])
    }

    @Test func evaluate_whenFingerMisses_theTouchCountedStandsAndTheNextScanCountsNothingBeforeItsTouch() {
        let (first, start) = started(options())
        var evaluator = first
        // Waiting for a finger writes nothing: a crash during the wait leaves no count.
        #expect(!start.persistsAnything)
        #expect(start.contains(.scanFinger(nil)))
        // The reader reports the finger: counted on disk while it captures and matches.
        let touch = evaluator.handle(.fingerPresent, nowMs: t0 + 500)
        #expect(touch == [persist(withPasscode.withFingerFailures(1, at: t0 + 500))])
        // The same touch reported again counts once.
        #expect(evaluator.handle(.fingerPresent, nowMs: t0 + 600).isEmpty)
        let out = evaluator.handle(.fingerNotMatched, nowMs: t0 + 1000)
        #expect(
            out == [
                .notify(Notice(.noMatch, .noMatch(triesLeft: 2), triesLeft: 2)),
                .notify(Notice(.fallbackAvailable, .fallbackEnterPassword)),
                .scanFinger(nil),
            ])
        #expect(out.events.map(\.message) == ["Not recognised, try again (2 left)", "Enter password"])
        #expect(evaluator.state.fingerFailures == 1)
    }

    @Test func evaluate_whenAMissComesWithoutATouchReport_countsItBeforeTheMissIsTold() {
        // A reader that does not report the finger: the count is written with the answer, before it is told.
        var (evaluator, _) = started(options())
        let out = evaluator.handle(.fingerNotMatched, nowMs: t0 + 1000)
        #expect(out.first == persist(withPasscode.withFingerFailures(1, at: t0 + 1000)))
        #expect(precedes(out.persistIndex, out.firstIndex(ofEvent: .noMatch)))
    }

    @Test func evaluate_whenAMatchComesWithoutATouchReportAndNothingToReset_writesNothing() {
        var (evaluator, _) = started(options())
        let out = evaluator.handle(.fingerMatched(finger: rightIndex), nowMs: t0 + 1000)
        #expect(!out.persistsAnything)
        #expect(out.code == .success)
    }

    @Test func evaluate_whenTriesRunOut_biometrics_failsAuthenticationFailed() {
        var (evaluator, _) = started(options(tries: 2))
        _ = miss(&evaluator, times: 1)
        let out = evaluator.handle(.fingerNotMatched, nowMs: t0)
        #expect(out.code == .authenticationFailed)
        #expect(out.result?.message == "Fingerprint not recognised")
        // The second miss is written before it is told.
        #expect(out.persisted.map(\.fingerFailures) == [2])
        #expect(precedes(out.persistIndex, out.finishIndex))
        #expect(evaluator.state.fingerFailures == 2)
        #expect(!out.contains(.scanFinger(nil)))
    }

    @Test func evaluate_whenTriesRunOut_deviceOwner_asksPasscode() {
        var (evaluator, _) = started(options(.deviceOwnerAuthentication, tries: 1))
        let out = evaluator.handle(.fingerNotMatched, nowMs: t0)
        #expect(out.eventKinds == [.noMatch, .passcodeNeeded])
        #expect(out.contains(.requestPasscode))
        #expect(precedes(out.firstIndex(of: .requestPasscode), out.firstIndex(ofEvent: .passcodeNeeded)))
        #expect(evaluator.phase == .awaitingPasscode)
    }

    @Test func evaluate_whenTriesRunOutAndClientNotCapable_failsAuthenticationFailed() {
        var (evaluator, _) = started(options(.deviceOwnerAuthentication, flags: [], tries: 1))
        let out = evaluator.handle(.fingerNotMatched, nowMs: t0)
        #expect(out.code == .authenticationFailed)
        #expect(!out.contains(.requestPasscode))
    }

    @Test func evaluate_whenFiveFingersMiss_locksBiometrics() {
        // Three misses in one evaluation, two in the next: the count spans evaluations.
        var (first, _) = started(options(tries: 3))
        let firstOut = miss(&first, times: 3)
        #expect(firstOut.code == .authenticationFailed)
        #expect(first.state.fingerFailures == 3)
        #expect(!first.state.biometryLocked)

        var (second, _) = started(options(tries: 3), state: first.state)
        let out = miss(&second, times: 2)
        let locked = "Too many attempts: use your passcode"
        #expect(out.code == .biometryLockout)
        #expect(out.result?.message == locked)
        #expect(out.events.last == Notice(.biometryLocked, .biometryLocked(passcodeSet: true)))
        #expect(out.events.last?.message == locked)
        #expect(second.state.biometryLocked)
        // Persist-before-reveal: the lock is durable before the person learns of it.
        let lockPersist = out.lastIndex { if case .persist(let s, _) = $0 { s.biometryLocked } else { false } }
        #expect(precedes(lockPersist, out.firstIndex(ofEvent: .biometryLocked)))
        #expect(precedes(lockPersist, out.finishIndex))
    }

    @Test func evaluate_whenLockedMidEvaluation_deviceOwner_asksPasscode() {
        var state = withPasscode
        state.fingerFailures = 4
        var (evaluator, _) = started(options(.deviceOwnerAuthentication), state: state)
        let out = evaluator.handle(.fingerNotMatched, nowMs: t0)
        #expect(out.eventKinds == [.noMatch, .biometryLocked, .passcodeNeeded])
        #expect(out.persisted.last?.biometryLocked == true)
        #expect(precedes(out.persistIndex, out.firstIndex(ofEvent: .noMatch)))
        #expect(evaluator.phase == .awaitingPasscode)
    }

    @Test func evaluate_whenLockedWithoutPasscode_saysLockedOnly() {
        var state = UserAuthState()
        state.fingerFailures = 4
        var (evaluator, _) = started(options(.deviceOwnerAuthentication), state: state)
        let out = evaluator.handle(.fingerNotMatched, nowMs: t0)
        #expect(out.result == Decision(.biometryLockout, .biometryLocked(passcodeSet: false)))
        #expect(out.result?.message == "Too many attempts: fingerprint locked")
    }

    @Test func evaluate_triesLeft_countsDownToTheNearerLimit() {
        var state = withPasscode
        state.fingerFailures = 3
        var (evaluator, _) = started(options(tries: 3), state: state)
        let out = evaluator.handle(.fingerNotMatched, nowMs: t0)
        #expect(out.events.first == Notice(.noMatch, .noMatch(triesLeft: 1), triesLeft: 1))
        #expect(out.events.first?.message == "Not recognised, try again (1 left)")
    }

    @Test(arguments: RetryHint.allCases)
    func evaluate_whenRetry_isNotCounted(hint: RetryHint) {
        var (evaluator, _) = started(options(tries: 1))
        _ = evaluator.handle(.fingerPresent, nowMs: t0)
        let out = evaluator.handle(.fingerRetry(hint), nowMs: t0)
        #expect(out == [.notify(Notice(.retry, .retry(hint), hint: hint)), .scanFinger(nil)])
        #expect(out.events.first?.message == hint.message)
        // The touch counted goes on: a bad swipe, and the finger put back, count nothing more.
        #expect(evaluator.handle(.fingerPresent, nowMs: t0).isEmpty)
        #expect(evaluator.state.fingerFailures == 1)
        // The one try is still there: a match after a retry succeeds.
        #expect(evaluator.handle(.fingerMatched(finger: rightIndex), nowMs: t0).code == .success)
    }

    @Test(arguments: [ResultCode.userCancel, .appCancel, .systemCancel])
    func evaluate_whenCancelledAfterATouch_isNotCounted(code: ResultCode) {
        var (evaluator, _) = started(options())
        _ = evaluator.handle(.fingerPresent, nowMs: t0)
        let out = evaluator.handle(.cancelled(code), nowMs: t0)
        #expect(out.first == .stopScan)
        #expect(out.code == code)
        // The touch counted is given back; if that write fails, it stays counted.
        #expect(out.contains(.persist(withPasscode.observed(t0), ifItFails: .goOn)))
        #expect(precedes(out.persistIndex, out.finishIndex))
        #expect(evaluator.state.fingerFailures == 0)
    }

    @Test func evaluate_whenCancelledWhileWaitingForAFinger_writesNothing() {
        var (evaluator, _) = started(options())
        let out = evaluator.handle(.cancelled(.userCancel), nowMs: t0)
        #expect(out == [.stopScan, .finish(Decision(.userCancel, .cancelled(.userCancel)))])
        #expect(evaluator.state.fingerFailures == 0)
    }

    @Test func evaluate_whenCancelledWithSuccess_failsSystemCancel() {
        var (evaluator, _) = started(options())
        let out = evaluator.handle(.cancelled(.success), nowMs: t0)
        #expect(out.code == .systemCancel)
    }

    @Test func evaluate_whenReaderFails_biometrics_failsNotAvailable() {
        var (evaluator, _) = started(options())
        let out = evaluator.handle(.readerFailed(.removed), nowMs: t0)
        #expect(
            out == [
                .finish(
                    Decision(
                        .biometryNotAvailable, .readerFailed("the fingerprint reader was unplugged"),
                        readerFailure: .removed))
            ])
        #expect(out.result?.message == "Fingerprint reader failed: the fingerprint reader was unplugged")
    }

    @Test func evaluate_whenReaderFails_deviceOwner_asksPasscode() {
        var (evaluator, _) = started(options(.deviceOwnerAuthentication))
        let out = evaluator.handle(.readerFailed(.removed), nowMs: t0)
        #expect(
            out == [
                .notify(Notice(.info, .readerFailed("the fingerprint reader was unplugged"))),
                .requestPasscode, .notify(Notice(.passcodeNeeded, .enterPasscode)),
            ])
        #expect(evaluator.state.fingerFailures == 0)
    }

    @Test func evaluate_whenTimedOutScanning_stopsScanAndFailsSystemCancelWritingNothing() {
        var (evaluator, _) = started(options())
        let out = evaluator.handle(.timedOut, nowMs: t0 + 30_000)
        #expect(out == [.stopScan, .finish(Decision(.systemCancel, .timedOutWaitingForFinger))])
        #expect(out.result?.message == "Timed out waiting for a fingerprint")
    }

    @Test func evaluate_afterFinish_ignoresInput() {
        var (evaluator, _) = started(options())
        _ = evaluator.handle(.cancelled(.userCancel), nowMs: t0)
        #expect(evaluator.handle(.fingerNotMatched, nowMs: t0).isEmpty)
        #expect(evaluator.handle(.fingerMatched(finger: rightIndex), nowMs: t0).isEmpty)
        #expect(evaluator.state.fingerFailures == 0)
    }

    @Test func evaluate_whenTheReaderIsWithdrawnMidScan_givesTheAttemptBackAndSaysWhy() {
        let why = ReaderUnavailable.readerShareUsed(account: "alice", shareMs: 60_000, retryInMs: 60_000)
        var (biometrics, _) = started(options())
        _ = biometrics.handle(.fingerPresent, nowMs: t0)
        let out = biometrics.handle(.readerWithdrawn(why), nowMs: t0)
        #expect(
            out == [
                .stopScan, .persist(withPasscode.observed(t0), ifItFails: .goOn),
                .finish(Decision(.biometryNotAvailable, .fingerNotAvailable(why))),
            ])
        var (owner, _) = started(options(.deviceOwnerAuthentication))
        let passcode = owner.handle(.readerWithdrawn(why), nowMs: t0)
        #expect(passcode.eventKinds == [.info, .passcodeNeeded])
    }

    @Test func evaluate_whenTheReaderCannotIdentify_triesEachEnrolledFingerInTurnAndNamesIt() {
        var facts = twoFingers
        facts.readerCanIdentify = false
        var (evaluator, start) = started(options(tries: 3), facts: facts)
        #expect(
            start.withoutWrites == [
                .scanFinger(.rightIndex), .notify(Notice(.placeFinger, .placeFinger(.rightIndex), finger: .rightIndex)),
            ])
        #expect(start.events.first?.message == "Place your right index finger on the reader")
        let missed = evaluator.handle(.fingerNotMatched, nowMs: t0)
        #expect(missed.contains(.scanFinger(.leftIndex)))
        #expect(missed.events.last == Notice(.placeFinger, .placeFinger(.leftIndex), finger: .leftIndex))
        #expect(missed.events.last?.message == "Place your left index finger on the reader")
        let matched = evaluator.handle(.fingerMatched(finger: .leftIndex), nowMs: t0)
        #expect(matched.result?.finger == .leftIndex)
        // With identify, one scan looks among all of them, and the prompt names none.
        let (_, any) = started(options(), facts: twoFingers)
        #expect(any.contains(.scanFinger(nil)))
    }

    // MARK: H1 — an attempt that cannot be recorded is refused

    @Test func evaluate_whenTheTouchCannotBeRecorded_refusesItBeforeItsAnswer() {
        var (evaluator, _) = started(options())
        // The daemon executes outputs in order: the touch's write fails, so no answer is ever told.
        #expect(evaluator.handle(.fingerPresent, nowMs: t0) == [persist(withPasscode.withFingerFailures(1, at: t0))])
        let out = evaluator.handle(.recordFailed, nowMs: t0)
        #expect(out == [.stopScan, .finish(Decision(.biometryNotAvailable, .attemptNotRecorded))])
        #expect(
            out.result?.message
                == "The attempt could not be recorded (is the state directory's file system full?); fingerprint and passcode are refused until it can be"
        )
        #expect(evaluator.isFinished)
    }

    @Test func evaluate_whenTheWriteAfterAMatchFails_refusesTheMatch() {
        var (evaluator, _) = started(options())
        _ = evaluator.handle(.fingerPresent, nowMs: t0)
        let matched = evaluator.handle(.fingerMatched(finger: rightIndex), nowMs: t0)
        #expect(matched.first == persist(withPasscode.observed(t0)))
        // That write failed: nothing after it ran, so no success was recorded or told.
        let out = evaluator.handle(.recordFailed, nowMs: t0)
        #expect(out == [.finish(Decision(.biometryNotAvailable, .attemptNotRecorded))])
    }

    @Test func evaluate_whenACountIsGivenBack_aFailedWriteLeavesItCounted() {
        var (evaluator, _) = started(options())
        _ = evaluator.handle(.fingerPresent, nowMs: t0)
        let out = evaluator.handle(.timedOut, nowMs: t0)
        let giveBack = out.compactMap { if case .persist(_, let ifItFails) = $0 { ifItFails } else { nil } }
        #expect(giveBack == [.goOn])
    }

    @Test func evaluate_whenACrashLeftTheCountAtTheLimit_isLocked() {
        // The fifth touch was counted, then the daemon died before its answer: the flag was never set.
        var state = withPasscode
        state.fingerFailures = 5
        let (evaluator, out) = started(options(), state: state)
        #expect(out.code == .biometryLockout)
        #expect(out.persisted.last?.biometryLocked == true)
        #expect(evaluator.state.biometryLocked)
    }
}

extension UserAuthState {
    /// This state as the evaluator sees it after reading the clock at `nowMs`.
    func observed(_ nowMs: Int64) -> UserAuthState {
        var s = self
        s.lastSeenMs = max(s.lastSeenMs, nowMs)
        return s
    }

    func withFingerFailures(_ count: Int, at nowMs: Int64) -> UserAuthState {
        var s = observed(nowMs)
        s.fingerFailures = count
        return s
    }
}
