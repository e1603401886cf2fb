// SPDX-License-Identifier: Apache-2.0

import LocalAuthCore
import LocalAuthProtocol
import Testing

/// Rows S32–S35 and Q9 of docs/policy.md: the evaluator when the "password required" rules
/// (`PasswordRule`) refuse the finger.
@Suite struct PasswordRequiredTests {
    static let afterRestart = oneFinger.with(passwordRequired: .restart)

    @Test func evaluate_biometrics_whenPasswordRequired_failsLockoutWithTheReasonBeforeAnyScan() {
        let (evaluator, out) = started(options(), facts: Self.afterRestart)
        #expect(out == [.finish(Decision(.biometryLockout, .passwordRequired(.restart)))])
        #expect(out.result?.message == "Password required after restart")
        #expect(evaluator.isFinished)
        let (_, aged) = started(options(), facts: oneFinger.with(passwordRequired: .maxAge(ms: 48 * 3_600_000)))
        #expect(aged.result?.message == "Password required after 48 hours")
    }

    @Test func evaluate_deviceOwner_whenPasswordRequired_saysWhyAndAsksPasscode() {
        var (evaluator, out) = started(options(.deviceOwnerAuthentication), facts: Self.afterRestart)
        #expect(!out.contains { if case .scanFinger = $0 { true } else { false } })
        #expect(out.events.first == Notice(.info, .passwordRequired(.restart)))
        #expect(out.events.first?.message == "Password required after restart")
        #expect(out.contains(.requestPasscode) && out.eventKinds.last == .passcodeNeeded)
        // The passcode counts as the password: its use is recorded before the success.
        let done = enter(&evaluator, correct: true, at: t0 + 1000)
        #expect(done.contains(.recordUse(.passcode)))
        #expect(done.firstIndex(of: .recordUse(.passcode))! < done.firstIndex(of: .recordSuccess)!)
        // Without a passcode there is nothing to fall back to.
        let (_, none) = started(options(.deviceOwnerAuthentication), state: UserAuthState(), facts: Self.afterRestart)
        #expect(none.code == .passcodeNotSet)
    }

    @Test func evaluate_whenPasswordRequired_ignoresTheReuseWindow() {
        var facts = Self.afterRestart
        facts.lastSuccessMs = t0 - 1000
        let (_, out) = started(options(reuseSeconds: 60), facts: facts)
        #expect(out.code == .biometryLockout)
        #expect(!out.contains(.recordSuccess))
    }

    @Test func evaluate_whenLockedOutAndPasswordRequired_saysTheLockout() {
        var state = withPasscode
        state.biometryLocked = true
        let (_, out) = started(options(), state: state, facts: Self.afterRestart)
        #expect(out.result == Decision(.biometryLockout, .biometryLocked(passcodeSet: true)))
        // A reader that is not there is said first, as Apple orders it.
        let (_, noReader) = started(options(), facts: noReader.with(passwordRequired: .restart))
        #expect(noReader.code == .biometryNotAvailable)
    }

    @Test func canEvaluate_whenPasswordRequired_failsLockoutForBiometricsOnly() {
        let biometrics = PolicyEvaluator.canEvaluate(
            policy: .deviceOwnerAuthenticationWithBiometrics, state: withPasscode, facts: Self.afterRestart,
            config: LockoutConfig(), nowMs: t0)
        #expect(biometrics.code == .biometryLockout)
        #expect(biometrics.message == "Password required after restart")
        let owner = PolicyEvaluator.canEvaluate(
            policy: .deviceOwnerAuthentication, state: withPasscode, facts: Self.afterRestart, config: LockoutConfig(),
            nowMs: t0)
        #expect(owner.code == .success)
    }
}
