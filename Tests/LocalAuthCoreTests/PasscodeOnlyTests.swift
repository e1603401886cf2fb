// SPDX-License-Identifier: Apache-2.0

import LocalAuthCore
import LocalAuthProtocol
import Testing

/// Rows R1–R5 of docs/policy.md: policy 3, the passcode alone (a right's `devicePasscode`
/// requirement), under the same passcode rules as policy 2.
@Suite struct PasscodeOnlyTests {
    @Test func evaluate_passcodeOnly_asksForThePasscodeWithoutScanning() {
        let (evaluator, out) = started(options(.devicePasscode), facts: oneFinger)
        #expect(!out.contains(.scanFinger(nil)))
        #expect(out.eventKinds == [.passcodeNeeded])
        #expect(precedes(out.firstIndex(of: .requestPasscode), out.firstIndex(ofEvent: .passcodeNeeded)))
        #expect(evaluator.phase == .awaitingPasscode)
    }

    @Test func evaluate_passcodeOnly_whenNoPasscode_failsPasscodeNotSet() {
        let (_, out) = started(options(.devicePasscode), state: UserAuthState(), facts: oneFinger)
        #expect(out.code == .passcodeNotSet)
        #expect(out.result?.message == "No passcode is set")
    }

    @Test func evaluate_passcodeOnly_whenClientCannotAsk_failsNotInteractive() {
        let (_, out) = started(options(.devicePasscode, flags: []))
        #expect(out.code == .notInteractive)
    }

    @Test func evaluate_passcodeOnly_whenSixthWrongPasscode_delaysAsPolicy2Does() {
        var state = withPasscode
        state.passcodeFailures = 5
        var (evaluator, _) = started(options(.devicePasscode, timeoutMs: 300_000), state: state)
        let out = enter(&evaluator, correct: false, token: "x")
        #expect(out.persisted.last?.passcodeFailures == 6)
        #expect(out.persisted.last?.passcodeLockedUntilMs == t0 + 60_000)
        #expect(precedes(out.persistIndex, out.firstIndex(of: .checkPasscode)))
        #expect(out.events.first { $0.kind == .passcodeWrong }?.delayMs == 60_000)
    }

    @Test func canEvaluate_passcodeOnly_needsAPasscodeNotAFinger() {
        let config = LockoutConfig()
        #expect(
            PolicyEvaluator.canEvaluate(
                policy: .devicePasscode, state: withPasscode, facts: noReader, config: config, nowMs: t0
            ).code == .success)
        #expect(
            PolicyEvaluator.canEvaluate(
                policy: .devicePasscode, state: UserAuthState(), facts: oneFinger, config: config, nowMs: t0
            ).code == .passcodeNotSet)
    }
}
