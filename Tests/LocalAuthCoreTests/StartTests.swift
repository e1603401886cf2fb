// SPDX-License-Identifier: Apache-2.0

import LocalAuthCore
import LocalAuthProtocol
import Testing

/// Rows S of docs/policy.md: what `start` decides before any input.
@Suite struct StartTests {
    @Test(arguments: PolicyKind.allCases)
    func evaluate_whenStateUnreadable_failsClosedWithoutPersisting(policy: PolicyKind) {
        // The daemon hands in a blank state when the stored one is corrupt: it must not read as "no lockout".
        let facts = EvaluationFacts(enrolledFingers: [rightIndex], stateReadable: false)
        let (evaluator, out) = started(options(policy), state: withPasscode, facts: facts)
        #expect(out == [.finish(Decision(.biometryNotAvailable, .stateUnreadable))])
        #expect(out.result?.message == "Stored authentication state is unreadable; ask an administrator")
        #expect(evaluator.isFinished)
    }

    /// A newer localauthd's record (a downgrade) fails closed as any unreadable one, and says so.
    @Test(arguments: PolicyKind.allCases)
    func evaluate_whenStateIsANewerVersions_failsClosedAndSaysSo(policy: PolicyKind) {
        var facts = EvaluationFacts(enrolledFingers: [rightIndex], stateReadable: false)
        facts.stateFromNewerVersion = true
        let (evaluator, out) = started(options(policy), state: withPasscode, facts: facts)
        #expect(out == [.finish(Decision(.biometryNotAvailable, .stateFromNewerVersion))])
        #expect(
            out.result?.message
                == "Stored authentication state was written by a newer version of localauthd; ask an administrator")
        #expect(evaluator.isFinished)
        let can = PolicyEvaluator.canEvaluate(
            policy: policy, state: withPasscode, facts: facts, config: LockoutConfig(), nowMs: t0)
        #expect(can.code == .biometryNotAvailable && can.phrase == .stateFromNewerVersion && can.biometryLocked == true)
    }

    @Test func evaluate_whenStateUnreadable_ignoresReuseWindow() {
        let facts = EvaluationFacts(enrolledFingers: [rightIndex], stateReadable: false, lastSuccessMs: t0 - 1000)
        let (_, out) = started(options(reuseSeconds: 300), facts: facts)
        #expect(out.code == .biometryNotAvailable)
    }

    @Test func evaluate_biometrics_whenNoReader_failsNotAvailable() {
        let (_, out) = started(options(), facts: noReader)
        #expect(out == [.finish(Decision(.biometryNotAvailable, .fingerNotAvailable(.lidClosed)))])
        #expect(out.result?.message == "Fingerprint not available: the laptop lid is closed and the reader is built in")
    }

    @Test func evaluate_biometrics_whenNoReaderAndNoReason_saysNoReader() {
        let (_, out) = started(options(), facts: EvaluationFacts(readerUnavailable: .noReader, enrolledFingers: []))
        #expect(out.result?.message == "Fingerprint not available: no fingerprint reader is connected")
    }

    @Test func evaluate_biometrics_whenNothingEnrolled_failsNotEnrolled() {
        let (_, out) = started(options(), facts: noFinger)
        #expect(out == [.finish(Decision(.biometryNotEnrolled, .noFingerEnrolled))])
        #expect(out.result?.message == "No fingerprint is enrolled for this user")
    }

    @Test(arguments: [
        EvaluationFacts(enrolledFingers: [], enrolledOnlyOnAbsentReaders: true),
        EvaluationFacts(readerUnavailable: .noReader, enrolledFingers: [], enrolledOnlyOnAbsentReaders: true),
    ])
    func evaluate_biometrics_whenFingersAreOnlyOnAnUnpluggedReader_failsDisconnected(facts: EvaluationFacts) {
        let (_, out) = started(options(), facts: facts)
        #expect(
            out == [
                .finish(Decision(.biometryDisconnected, .fingersOnDisconnectedReader))
            ])
        #expect(out.result?.message == "The fingerprint reader your fingers are enrolled on is not connected")
    }

    @Test func evaluate_deviceOwner_whenFingersAreOnlyOnAnUnpluggedReader_asksPasscode() {
        let facts = EvaluationFacts(enrolledFingers: [], enrolledOnlyOnAbsentReaders: true)
        let (_, out) = started(options(.deviceOwnerAuthentication), facts: facts)
        #expect(out == [.requestPasscode, .notify(Notice(.passcodeNeeded, .enterPasscode))])
    }

    @Test func evaluate_biometrics_whenLocked_failsLockout() {
        var state = withPasscode
        state.biometryLocked = true
        let (_, out) = started(options(), state: state)
        #expect(out == [.finish(Decision(.biometryLockout, .biometryLocked(passcodeSet: true)))])
        #expect(out.result?.message == "Too many attempts: use your passcode")
    }

    @Test func evaluate_whenReaderUsable_startsScanBeforePromptCountingNothingYet() {
        // Nothing is counted before a finger touches (ADR 0008): a crash during the wait counts nothing.
        let (evaluator, out) = started(options())
        #expect(
            out == [
                .scanFinger(nil),
                .notify(Notice(.placeFinger, .placeFinger(rightIndex), finger: rightIndex)),
            ])
        #expect(out.events.first?.message == "Place your right index finger on the reader")
        #expect(evaluator.phase == .scanning)
    }

    @Test func evaluate_whenSeveralFingersEnrolled_promptsForAnyFinger() {
        let (_, out) = started(options(), facts: twoFingers)
        #expect(out.events == [Notice(.placeFinger, .placeFinger(nil))])
        #expect(out.events.first?.message == "Place a finger on the reader")
    }

    @Test func evaluate_prompt_includesReasonAndCancelTitle() {
        let (_, out) = started(options(reason: "Unlock your notes", cancelTitle: "Not now"))
        #expect(
            out.events.first?.message
                == "Unlock your notes: Place your right index finger on the reader [Not now]")
    }

    @Test(arguments: PolicyKind.allCases)
    func evaluate_whenInteractionNotAllowed_failsNotInteractive(policy: PolicyKind) {
        let (_, out) = started(options(policy, flags: [.interactionNotAllowed, .passcodeCapable]))
        #expect(out == [.finish(Decision(.notInteractive, .interactionNotAllowed))])
        #expect(out.result?.message == "Interaction is not allowed")
    }

    @Test func evaluate_whenInteractionNotAllowedAndReuseValid_succeeds() {
        let facts = EvaluationFacts(enrolledFingers: [rightIndex], lastSuccessMs: t0 - 10_000)
        let (_, out) = started(options(flags: [.interactionNotAllowed], reuseSeconds: 60), facts: facts)
        #expect(out.code == .success)
    }

    @Test func evaluate_whenReuseWindowCovers_succeedsWithoutScan() {
        let facts = EvaluationFacts(enrolledFingers: [rightIndex], lastSuccessMs: t0 - 59_999)
        let (evaluator, out) = started(options(reuseSeconds: 60), facts: facts)
        // No scan, no prompt, and no recordSuccess: a reuse never extends its own window.
        #expect(out == [.finish(Decision(.success, .authenticatedByRecentSuccess, domainState: [1, 2, 3]))])
        #expect(out.result?.message == "Authenticated by a recent success")
        #expect(evaluator.isFinished)
    }

    @Test func evaluate_whenReuseExpired_scans() {
        // The window is half-open: a success exactly reuseSeconds ago no longer counts.
        let facts = EvaluationFacts(enrolledFingers: [rightIndex], lastSuccessMs: t0 - 60_000)
        let (_, out) = started(options(reuseSeconds: 60), facts: facts)
        #expect(out.withoutWrites.first == .scanFinger(nil))
        #expect(out.result == nil)
    }

    @Test func evaluate_whenReuseSecondsZero_neverReuses() {
        let facts = EvaluationFacts(enrolledFingers: [rightIndex], lastSuccessMs: t0)
        let (_, out) = started(options(reuseSeconds: 0), facts: facts)
        #expect(out.withoutWrites.first == .scanFinger(nil))
    }

    @Test func evaluate_whenReuseSecondsAboveConfigMax_clamps() {
        let facts = EvaluationFacts(enrolledFingers: [rightIndex], lastSuccessMs: t0 - 100_000)
        let (_, out) = started(options(reuseSeconds: 300), facts: facts, config: LockoutConfig(maxReuseSeconds: 60))
        #expect(out.withoutWrites.first == .scanFinger(nil))
        let (_, allowed) = started(options(reuseSeconds: 300), facts: facts, config: LockoutConfig())
        #expect(allowed.code == .success)
    }

    @Test func evaluate_whenLastSuccessInFuture_doesNotReuse() {
        // The clock went back after the success: the elapsed time is unknown, so no reuse.
        let facts = EvaluationFacts(enrolledFingers: [rightIndex], lastSuccessMs: t0 + 1)
        let (_, out) = started(options(reuseSeconds: 300), facts: facts)
        #expect(out.withoutWrites.first == .scanFinger(nil))
    }

    @Test func evaluate_whenReuseButBiometryLocked_failsLockout() {
        var state = withPasscode
        state.biometryLocked = true
        let facts = EvaluationFacts(enrolledFingers: [rightIndex], lastSuccessMs: t0 - 1000)
        let (_, out) = started(options(reuseSeconds: 300), state: state, facts: facts)
        #expect(out.code == .biometryLockout)
    }

    @Test func evaluate_deviceOwner_whenNoFingerAndNoPasscode_failsPasscodeNotSet() {
        let (_, out) = started(options(.deviceOwnerAuthentication), state: UserAuthState(), facts: noReader)
        #expect(out == [.finish(Decision(.passcodeNotSet, .noPasscodeAndNoFinger))])
        #expect(out.result?.message == "No passcode is set and no fingerprint can be used")
    }

    @Test func evaluate_deviceOwner_whenNoReader_asksPasscode() {
        let (evaluator, out) = started(options(.deviceOwnerAuthentication), facts: noReader)
        #expect(out == [.requestPasscode, .notify(Notice(.passcodeNeeded, .enterPasscode))])
        #expect(out.events.first?.message == "Enter your passcode")
        #expect(evaluator.phase == .awaitingPasscode)
    }

    @Test func evaluate_deviceOwner_whenNotEnrolled_asksPasscode() {
        let (_, out) = started(options(.deviceOwnerAuthentication, reason: "sudo"), facts: noFinger)
        #expect(
            out == [
                .requestPasscode,
                .notify(Notice(.passcodeNeeded, .prompt(reason: "sudo", .enterPasscode, cancelTitle: nil))),
            ])
        #expect(out.events.first?.message == "sudo: Enter your passcode")
    }

    @Test func evaluate_deviceOwner_whenLocked_announcesLockAndAsksPasscode() {
        var state = withPasscode
        state.biometryLocked = true
        let (_, out) = started(options(.deviceOwnerAuthentication), state: state)
        #expect(
            out == [
                .notify(Notice(.biometryLocked, .biometryLocked(passcodeSet: true))),
                .requestPasscode, .notify(Notice(.passcodeNeeded, .enterPasscode)),
            ])
    }

    @Test func evaluate_deviceOwner_whenPasscodeNeededButClientNotCapable_failsNotInteractive() {
        let (_, out) = started(options(.deviceOwnerAuthentication, flags: []), facts: noReader)
        #expect(out.code == .notInteractive)
        #expect(!out.contains(.requestPasscode))
    }

    @Test func evaluate_deviceOwner_whenFingerUsable_scansFirst() {
        let (_, out) = started(options(.deviceOwnerAuthentication))
        #expect(out.withoutWrites.first == .scanFinger(nil))
        #expect(!out.contains(.requestPasscode))
    }

    @Test func evaluate_start_persistsNothingWhenNothingChanges() {
        var state = withPasscode
        state.lastSeenMs = t0 - 5000
        let (evaluator, out) = started(options(.deviceOwnerAuthentication), state: state, facts: noFinger)
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

/// Rows S28–S30: the reader held by another request, and whose request a prompt is.
@Suite struct ReaderBusyTests {
    static let sudo = RequestLabel(program: "sudo", account: "alice")

    @Test func evaluate_biometrics_whenAnotherRequestHoldsTheReader_saysWhoseAtOnce() {
        let facts = EvaluationFacts(readerUnavailable: .readerBusy(by: Self.sudo), enrolledFingers: [rightIndex])
        let (_, out) = started(options(), facts: facts)
        #expect(out == [.finish(Decision(.biometryNotAvailable, .fingerNotAvailable(.readerBusy(by: Self.sudo))))])
        #expect(
            out.result?.message
                == "Fingerprint not available: the reader is in use by sudo for alice; try again when it is done")
        #expect(!out.persistsAnything)
    }

    @Test func evaluate_deviceOwner_whenAnotherRequestHoldsTheReader_saysSoAndAsksPasscode() {
        let facts = EvaluationFacts(readerUnavailable: .readerBusy(by: nil), enrolledFingers: [rightIndex])
        let (_, out) = started(options(.deviceOwnerAuthentication), facts: facts)
        #expect(
            out == [
                .notify(Notice(.info, .fingerNotAvailable(.readerBusy(by: nil)))), .requestPasscode,
                .notify(Notice(.passcodeNeeded, .enterPasscode)),
            ])
        #expect(
            out.events.first?.message == "Fingerprint not available: the reader is in use by another account's request")
    }

    @Test func evaluate_prompt_namesWhoseRequestItIs() {
        let facts = EvaluationFacts(enrolledFingers: [rightIndex], label: Self.sudo)
        let (_, out) = started(options(reason: "Update the system"), facts: facts)
        #expect(
            out.events.first?.message
                == "Update the system: Place your right index finger on the reader (sudo for alice)")
    }

    @Test func evaluate_whenTheAccountHasHadItsShareOfTheReader_saysWhenItIsFreeAgain() {
        let why = ReaderUnavailable.readerShareUsed(account: "alice", shareMs: 60_000, retryInMs: 45_000)
        let (_, out) = started(options(), facts: EvaluationFacts(readerUnavailable: why, enrolledFingers: [rightIndex]))
        #expect(out.code == .biometryNotAvailable)
        #expect(
            out.result?.message
                == "Fingerprint not available: alice's requests have had the reader for 1 minute of the last 2 minutes; it is free for others until 45 seconds from now"
        )
    }
}
