// SPDX-License-Identifier: Apache-2.0

import LocalAuthCore
import LocalAuthProtocol
import Testing

/// Rows S1–S21 of docs/policy.md: what `start` decides before any input.
@Suite struct StartTests {
    @Test(arguments: PolicyKind.allCases)
    func evaluate_whenStateUnreadable_failsClosedWithoutPersisting(policy: PolicyKind) {
        // The daemon hands in a blank state when the stored one is corrupt: it must not read as "no lockout".
        let facts = EvaluationFacts(readerAvailable: true, enrolledFingers: [rightIndex], stateReadable: false)
        let (evaluator, out) = started(options(policy), state: withPasscode, facts: facts)
        #expect(
            out == [
                .finish(
                    Result(.biometryNotAvailable, "Stored authentication state is unreadable; ask an administrator"))
            ])
        #expect(evaluator.isFinished)
    }

    @Test func evaluate_whenStateUnreadable_ignoresReuseWindow() {
        let facts = EvaluationFacts(
            readerAvailable: true, enrolledFingers: [rightIndex], stateReadable: false, lastSuccessMs: t0 - 1000)
        let (_, out) = started(options(reuseSeconds: 300), facts: facts)
        #expect(out.code == .biometryNotAvailable)
    }

    @Test func evaluate_biometrics_whenNoReader_failsNotAvailable() {
        let (_, out) = started(options(), facts: noReader)
        #expect(out == [.finish(Result(.biometryNotAvailable, "Fingerprint not available: the laptop lid is closed"))])
    }

    @Test func evaluate_biometrics_whenNoReaderAndNoReason_saysNoReader() {
        let (_, out) = started(options(), facts: EvaluationFacts(readerAvailable: false, enrolledFingers: []))
        #expect(out.result?.message == "Fingerprint not available: no fingerprint reader is connected")
    }

    @Test func evaluate_biometrics_whenNothingEnrolled_failsNotEnrolled() {
        let (_, out) = started(options(), facts: noFinger)
        #expect(out == [.finish(Result(.biometryNotEnrolled, "No fingerprint is enrolled for this user"))])
    }

    @Test(arguments: [
        EvaluationFacts(readerAvailable: true, enrolledFingers: [], enrolledOnlyOnAbsentReaders: true),
        EvaluationFacts(
            readerAvailable: false, readerUnavailableReason: "no fingerprint reader is connected", enrolledFingers: [],
            enrolledOnlyOnAbsentReaders: true),
    ])
    func evaluate_biometrics_whenFingersAreOnlyOnAnUnpluggedReader_failsDisconnected(facts: EvaluationFacts) {
        let (_, out) = started(options(), facts: facts)
        #expect(
            out == [
                .finish(
                    Result(
                        .biometryDisconnected, "The fingerprint reader your fingers are enrolled on is not connected"))
            ])
    }

    @Test func evaluate_deviceOwner_whenFingersAreOnlyOnAnUnpluggedReader_asksPasscode() {
        let facts = EvaluationFacts(readerAvailable: true, enrolledFingers: [], enrolledOnlyOnAbsentReaders: true)
        let (_, out) = started(options(.deviceOwnerAuthentication), facts: facts)
        #expect(out == [.requestPasscode, .event(Event(.passcodeNeeded, "Enter your passcode"))])
    }

    @Test func evaluate_biometrics_whenLocked_failsLockout() {
        var state = withPasscode
        state.biometryLocked = true
        let (_, out) = started(options(), state: state)
        #expect(
            out == [
                .finish(Result(.biometryLockout, "Fingerprint locked after too many attempts — use your passcode"))
            ])
    }

    @Test func evaluate_whenReaderUsable_startsScanBeforePrompt() {
        let (evaluator, out) = started(options())
        #expect(
            out == [
                .scanFinger,
                .event(
                    Event(.placeFinger, "Place your right index finger on the fingerprint reader", finger: rightIndex)),
            ])
        #expect(evaluator.phase == .scanning)
    }

    @Test func evaluate_whenSeveralFingersEnrolled_promptsForAnyFinger() {
        let (_, out) = started(options(), facts: twoFingers)
        #expect(out.events == [Event(.placeFinger, "Place a finger on the fingerprint reader")])
    }

    @Test func evaluate_prompt_includesReasonAndCancelTitle() {
        let (_, out) = started(options(reason: "Unlock your notes", cancelTitle: "Not now"))
        #expect(
            out.events.first?.message
                == "Unlock your notes: Place your right index finger on the fingerprint reader [Not now]")
    }

    @Test(arguments: PolicyKind.allCases)
    func evaluate_whenInteractionNotAllowed_failsNotInteractive(policy: PolicyKind) {
        let (_, out) = started(options(policy, flags: [.interactionNotAllowed, .passcodeCapable]))
        #expect(out == [.finish(Result(.notInteractive, "Interaction is not allowed"))])
    }

    @Test func evaluate_whenInteractionNotAllowedAndReuseValid_succeeds() {
        let facts = EvaluationFacts(readerAvailable: true, enrolledFingers: [rightIndex], lastSuccessMs: t0 - 10_000)
        let (_, out) = started(options(flags: [.interactionNotAllowed], reuseSeconds: 60), facts: facts)
        #expect(out.code == .success)
    }

    @Test func evaluate_whenReuseWindowCovers_succeedsWithoutScan() {
        let facts = EvaluationFacts(readerAvailable: true, enrolledFingers: [rightIndex], lastSuccessMs: t0 - 59_999)
        let (evaluator, out) = started(options(reuseSeconds: 60), facts: facts)
        // No scan, no prompt, and no recordSuccess: a reuse never extends its own window.
        #expect(
            out == [
                .finish(
                    Result(
                        .success, "Authenticated by a recent success",
                        extra: [Field(tag: .domainState, value: [1, 2, 3])]))
            ])
        #expect(evaluator.isFinished)
    }

    @Test func evaluate_whenReuseExpired_scans() {
        // The window is half-open: a success exactly reuseSeconds ago no longer counts.
        let facts = EvaluationFacts(readerAvailable: true, enrolledFingers: [rightIndex], lastSuccessMs: t0 - 60_000)
        let (_, out) = started(options(reuseSeconds: 60), facts: facts)
        #expect(out.first == .scanFinger)
        #expect(out.result == nil)
    }

    @Test func evaluate_whenReuseSecondsZero_neverReuses() {
        let facts = EvaluationFacts(readerAvailable: true, enrolledFingers: [rightIndex], lastSuccessMs: t0)
        let (_, out) = started(options(reuseSeconds: 0), facts: facts)
        #expect(out.first == .scanFinger)
    }

    @Test func evaluate_whenReuseSecondsAboveConfigMax_clamps() {
        let facts = EvaluationFacts(readerAvailable: true, enrolledFingers: [rightIndex], lastSuccessMs: t0 - 100_000)
        let (_, out) = started(options(reuseSeconds: 300), facts: facts, config: LockoutConfig(maxReuseSeconds: 60))
        #expect(out.first == .scanFinger)
        let (_, allowed) = started(options(reuseSeconds: 300), facts: facts, config: LockoutConfig())
        #expect(allowed.code == .success)
    }

    @Test func evaluate_whenLastSuccessInFuture_doesNotReuse() {
        // The clock went back after the success: the elapsed time is unknown, so no reuse.
        let facts = EvaluationFacts(readerAvailable: true, enrolledFingers: [rightIndex], lastSuccessMs: t0 + 1)
        let (_, out) = started(options(reuseSeconds: 300), facts: facts)
        #expect(out.first == .scanFinger)
    }

    @Test func evaluate_whenReuseButBiometryLocked_failsLockout() {
        var state = withPasscode
        state.biometryLocked = true
        let facts = EvaluationFacts(readerAvailable: true, enrolledFingers: [rightIndex], lastSuccessMs: t0 - 1000)
        let (_, out) = started(options(reuseSeconds: 300), state: state, facts: facts)
        #expect(out.code == .biometryLockout)
    }

    @Test func evaluate_deviceOwner_whenNoFingerAndNoPasscode_failsPasscodeNotSet() {
        let (_, out) = started(options(.deviceOwnerAuthentication), state: UserAuthState(), facts: noReader)
        #expect(out == [.finish(Result(.passcodeNotSet, "No passcode is set and no fingerprint can be used"))])
    }

    @Test func evaluate_deviceOwner_whenNoReader_asksPasscode() {
        let (evaluator, out) = started(options(.deviceOwnerAuthentication), facts: noReader)
        #expect(out == [.requestPasscode, .event(Event(.passcodeNeeded, "Enter your passcode"))])
        #expect(evaluator.phase == .awaitingPasscode)
    }

    @Test func evaluate_deviceOwner_whenNotEnrolled_asksPasscode() {
        let (_, out) = started(options(.deviceOwnerAuthentication, reason: "sudo"), facts: noFinger)
        #expect(out == [.requestPasscode, .event(Event(.passcodeNeeded, "sudo: Enter your passcode"))])
    }

    @Test func evaluate_deviceOwner_whenLocked_announcesLockAndAsksPasscode() {
        var state = withPasscode
        state.biometryLocked = true
        let (_, out) = started(options(.deviceOwnerAuthentication), state: state)
        #expect(
            out == [
                .event(Event(.biometryLocked, "Fingerprint locked after too many attempts — use your passcode")),
                .requestPasscode, .event(Event(.passcodeNeeded, "Enter your passcode")),
            ])
    }

    @Test func evaluate_deviceOwner_whenPasscodeNeededButClientNotCapable_failsNotInteractive() {
        let (_, out) = started(options(.deviceOwnerAuthentication, flags: []), facts: noReader)
        #expect(out.code == .notInteractive)
        #expect(!out.contains(.requestPasscode))
    }

    @Test func evaluate_deviceOwner_whenFingerUsable_scansFirst() {
        let (_, out) = started(options(.deviceOwnerAuthentication))
        #expect(out.first == .scanFinger)
        #expect(!out.contains(.requestPasscode))
    }

    @Test func evaluate_start_persistsNothingWhenNothingChanges() {
        var state = withPasscode
        state.lastSeenMs = t0 - 5000
        let (evaluator, out) = started(options(), state: state)
        #expect(!out.persistsAnything)
        // The clock reading is kept in memory and rides along with the next real change.
        #expect(evaluator.state.lastSeenMs == t0)
    }

    @Test func evaluate_whenStartedTwice_ignoresSecondStart() {
        var (evaluator, _) = started(options())
        #expect(evaluator.start(nowMs: t0 + 1).isEmpty)
    }

    @Test func evaluate_whenInputBeforeStart_ignoresIt() {
        var evaluator = PolicyEvaluator(
            options: options(), state: withPasscode, facts: oneFinger, config: LockoutConfig())
        #expect(evaluator.handle(.fingerMatched(finger: rightIndex), nowMs: t0).isEmpty)
        #expect(evaluator.phase == .idle)
    }
}
