// SPDX-License-Identifier: Apache-2.0

import LocalAuthCore
import LocalAuthProtocol
import Testing

/// Rows B of docs/policy.md: the fallback button.
@Suite struct FallbackTests {
    @Test(arguments: [PolicyKind.deviceOwnerAuthenticationWithBiometrics, .deviceOwnerAuthentication])
    func evaluate_fallback_isHiddenBeforeFirstFailure(policy: PolicyKind) {
        var (evaluator, out) = started(options(policy))
        #expect(!out.eventKinds.contains(.fallbackAvailable))
        // A FALLBACK the daemon never offered changes nothing.
        #expect(evaluator.handle(.fallbackChosen, nowMs: t0).isEmpty)
        #expect(evaluator.phase == .scanning)
    }

    @Test(arguments: [PolicyKind.deviceOwnerAuthenticationWithBiometrics, .deviceOwnerAuthentication])
    func evaluate_fallback_isOfferedOnceAfterFirstFailure(policy: PolicyKind) {
        var (evaluator, _) = started(options(policy, tries: 5))
        let first = evaluator.handle(.fingerNotMatched, nowMs: t0)
        #expect(first.eventKinds == [.noMatch, .fallbackAvailable])
        let second = evaluator.handle(.fingerNotMatched, nowMs: t0)
        #expect(second.eventKinds == [.noMatch])
    }

    @Test(arguments: [PolicyKind.deviceOwnerAuthenticationWithBiometrics, .deviceOwnerAuthentication])
    func evaluate_fallback_isHiddenWithEmptyTitle(policy: PolicyKind) {
        var (evaluator, _) = started(options(policy, fallbackTitle: ""))
        let out = evaluator.handle(.fingerNotMatched, nowMs: t0)
        #expect(out.eventKinds == [.noMatch])
        #expect(evaluator.handle(.fallbackChosen, nowMs: t0).isEmpty)
    }

    @Test func evaluate_fallback_usesCustomTitle() {
        var (evaluator, _) = started(options(fallbackTitle: "Use my PIN"))
        let out = evaluator.handle(.fingerNotMatched, nowMs: t0)
        #expect(out.events.last == Notice(.fallbackAvailable, .verbatim("Use my PIN")))
        #expect(out.events.last?.message == "Use my PIN")
    }

    @Test func evaluate_fallback_biometrics_failsUserFallback() {
        var (evaluator, _) = started(options())
        _ = evaluator.handle(.fingerNotMatched, nowMs: t0)
        // The second scan's touch is counted, then the person chooses the fallback: it is given back.
        _ = evaluator.handle(.fingerPresent, nowMs: t0)
        let out = evaluator.handle(.fallbackChosen, nowMs: t0)
        #expect(
            out == [
                .stopScan, .persist(withPasscode.withFingerFailures(1, at: t0), ifItFails: .goOn),
                .finish(Decision(.userFallback, .userChoseFallback)),
            ])
        #expect(out.result?.message == "The user chose the fallback")
    }

    @Test func evaluate_fallback_deviceOwner_stopsScanAndAsksPasscode() {
        var (evaluator, first) = started(options(.deviceOwnerAuthentication))
        #expect(first.withoutWrites.first == .scanFinger(nil))
        let miss = evaluator.handle(.fingerNotMatched, nowMs: t0)
        #expect(miss.events.last == Notice(.fallbackAvailable, .fallbackUsePasscode))
        #expect(miss.events.last?.message == "Use passcode")
        let out = evaluator.handle(.fallbackChosen, nowMs: t0)
        #expect(
            out.withoutWrites == [.stopScan, .requestPasscode, .notify(Notice(.passcodeNeeded, .enterPasscode))])
    }

    @Test func evaluate_fallback_deviceOwnerWithoutPasscode_isHidden() {
        var (evaluator, _) = started(options(.deviceOwnerAuthentication), state: UserAuthState())
        let out = evaluator.handle(.fingerNotMatched, nowMs: t0)
        #expect(out.eventKinds == [.noMatch])
    }

    @Test func evaluate_whenScanResultArrivesAfterFallback_ignoresIt() {
        var (evaluator, _) = started(options(.deviceOwnerAuthentication))
        _ = evaluator.handle(.fingerNotMatched, nowMs: t0)
        _ = evaluator.handle(.fallbackChosen, nowMs: t0)
        // The scan raced the stopScan: neither outcome counts once the passcode is asked for.
        #expect(evaluator.handle(.fingerNotMatched, nowMs: t0).isEmpty)
        #expect(evaluator.handle(.fingerMatched(finger: rightIndex), nowMs: t0).isEmpty)
        #expect(evaluator.state.fingerFailures == 1)
        #expect(evaluator.phase == .awaitingPasscode)
    }
}
