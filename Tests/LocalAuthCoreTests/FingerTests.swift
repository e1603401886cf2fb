// SPDX-License-Identifier: Apache-2.0

import LocalAuthCore
import LocalAuthProtocol
import Testing

/// Rows F1–F14 of docs/policy.md: inputs while a finger is being scanned.
@Suite struct FingerTests {
    @Test func evaluate_whenFingerMatches_recordsSuccessAndFinishes() {
        var (evaluator, _) = started(options())
        let out = evaluator.handle(.fingerMatched(finger: rightIndex), nowMs: t0 + 1000)
        let extra = [Field(tag: .domainState, value: [1, 2, 3]), Field(tag: .finger, value: Array(rightIndex.utf8))]
        #expect(out == [.recordSuccess, .finish(Result(.success, "Authenticated with fingerprint", extra: extra))])
        #expect(evaluator.isFinished)
    }

    @Test func evaluate_whenFingerMatchesAfterFailures_resetsFailuresBeforeSuccess() {
        var state = withPasscode
        state.fingerFailures = 3
        var (evaluator, _) = started(options(), state: state)
        let out = evaluator.handle(.fingerMatched(finger: rightIndex), nowMs: t0 + 1000)
        #expect(out.persisted.map(\.fingerFailures) == [0])
        #expect(out.first.map { if case .persist = $0 { true } else { false } } == true)
        #expect(out.dropFirst().first == .recordSuccess)
    }

    @Test func evaluate_whenFingerMisses_persistsBeforeNoMatch() {
        var (evaluator, _) = started(options())
        let out = evaluator.handle(.fingerNotMatched, nowMs: t0 + 1000)
        var expected = withPasscode
        expected.fingerFailures = 1
        expected.lastSeenMs = t0 + 1000
        #expect(
            out == [
                .persist(expected),
                .event(Event(.noMatch, "Fingerprint not recognised (2 tries left)", triesLeft: 2)),
                .event(Event(.fallbackAvailable, "Enter password")),
                .scanFinger,
            ])
    }

    @Test func evaluate_whenTriesRunOut_biometrics_failsAuthenticationFailed() {
        var (evaluator, _) = started(options(tries: 2))
        _ = miss(&evaluator, times: 1)
        let out = evaluator.handle(.fingerNotMatched, nowMs: t0)
        #expect(out.code == .authenticationFailed)
        #expect(out.result?.message == "Fingerprint not recognised")
        #expect(precedes(out.persistIndex, out.firstIndex(ofEvent: .noMatch)))
        #expect(out.persisted.last?.fingerFailures == 2)
        #expect(!out.contains(.scanFinger))
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
        let locked = "Fingerprint locked after too many attempts — use your passcode"
        #expect(out.code == .biometryLockout)
        #expect(out.result?.message == locked)
        #expect(out.events.last == Event(.biometryLocked, locked))
        #expect(second.state.biometryLocked)
        // Persist-before-reveal: the lock is durable before the person learns of it.
        let lockPersist = out.lastIndex { if case .persist(let s) = $0 { s.biometryLocked } else { false } }
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
        #expect(out.result == Result(.biometryLockout, "Fingerprint locked after too many attempts"))
    }

    @Test func evaluate_triesLeft_countsDownToTheNearerLimit() {
        var state = withPasscode
        state.fingerFailures = 3
        var (evaluator, _) = started(options(tries: 3), state: state)
        let out = evaluator.handle(.fingerNotMatched, nowMs: t0)
        #expect(out.events.first == Event(.noMatch, "Fingerprint not recognised (1 try left)", triesLeft: 1))
    }

    @Test(arguments: RetryHint.allCases)
    func evaluate_whenRetry_isNotCounted(hint: RetryHint) {
        var (evaluator, _) = started(options(tries: 1))
        let out = evaluator.handle(.fingerRetry(hint), nowMs: t0)
        #expect(out == [.event(Event(.retry, hint.message, hint: hint)), .scanFinger])
        #expect(evaluator.state.fingerFailures == 0)
        // The one try is still there: a match after a retry succeeds.
        #expect(evaluator.handle(.fingerMatched(finger: rightIndex), nowMs: t0).code == .success)
    }

    @Test(arguments: [ResultCode.userCancel, .appCancel, .systemCancel])
    func evaluate_whenCancelled_isNotCounted(code: ResultCode) {
        var (evaluator, _) = started(options())
        let out = evaluator.handle(.cancelled(code), nowMs: t0)
        #expect(out.first == .stopScan)
        #expect(out.code == code)
        #expect(!out.persistsAnything)
        #expect(evaluator.state.fingerFailures == 0)
    }

    @Test func evaluate_whenCancelledWithSuccess_failsSystemCancel() {
        var (evaluator, _) = started(options())
        let out = evaluator.handle(.cancelled(.success), nowMs: t0)
        #expect(out.code == .systemCancel)
    }

    @Test func evaluate_whenReaderFails_biometrics_failsNotAvailable() {
        var (evaluator, _) = started(options())
        let out = evaluator.handle(.readerFailed("the reader was unplugged"), nowMs: t0)
        #expect(out == [.finish(Result(.biometryNotAvailable, "Fingerprint reader failed: the reader was unplugged"))])
    }

    @Test func evaluate_whenReaderFails_deviceOwner_asksPasscode() {
        var (evaluator, _) = started(options(.deviceOwnerAuthentication))
        let out = evaluator.handle(.readerFailed("the reader was unplugged"), nowMs: t0)
        #expect(
            out == [
                .event(Event(.info, "Fingerprint reader failed: the reader was unplugged")),
                .requestPasscode, .event(Event(.passcodeNeeded, "Enter your passcode")),
            ])
        #expect(!out.persistsAnything)
    }

    @Test func evaluate_whenTimedOutScanning_stopsScanAndFailsSystemCancel() {
        var (evaluator, _) = started(options())
        let out = evaluator.handle(.timedOut, nowMs: t0 + 30_000)
        #expect(out == [.stopScan, .finish(Result(.systemCancel, "Timed out waiting for a fingerprint"))])
    }

    @Test func evaluate_afterFinish_ignoresInput() {
        var (evaluator, _) = started(options())
        _ = evaluator.handle(.cancelled(.userCancel), nowMs: t0)
        #expect(evaluator.handle(.fingerNotMatched, nowMs: t0).isEmpty)
        #expect(evaluator.handle(.fingerMatched(finger: rightIndex), nowMs: t0).isEmpty)
        #expect(evaluator.state.fingerFailures == 0)
    }
}
