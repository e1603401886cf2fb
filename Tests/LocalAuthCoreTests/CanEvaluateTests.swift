// SPDX-License-Identifier: Apache-2.0

import LocalAuthCore
import LocalAuthProtocol
import Testing

/// Rows Q of docs/policy.md: canEvaluatePolicy and biometryType, which never prompt.
@Suite struct CanEvaluateTests {
    func check(_ policy: PolicyKind, state: UserAuthState = withPasscode, facts: EvaluationFacts = oneFinger)
        -> Decision
    {
        PolicyEvaluator.canEvaluate(policy: policy, state: state, facts: facts, config: LockoutConfig(), nowMs: t0)
    }

    @Test(arguments: PolicyKind.allCases)
    func canEvaluate_whenFingerUsable_succeedsWithTypeAndDomainState(policy: PolicyKind) {
        let result = check(policy)
        #expect(
            result
                == Decision(
                    .success, .policyCanBeEvaluated, domainState: [1, 2, 3], biometryType: .touchID,
                    biometryLocked: false, passcodeSet: true))
    }

    @Test func canEvaluate_biometrics_whenNoReader_failsNotAvailable() {
        let result = check(.deviceOwnerAuthenticationWithBiometrics, facts: noReader)
        #expect(result.code == .biometryNotAvailable)
        #expect(result.message == "Fingerprint not available: the laptop lid is closed and the reader is built in")
        #expect(result.biometryType == BiometryKind.none)
        #expect(result.domainState == nil)
    }

    @Test func canEvaluate_biometrics_whenNotEnrolled_failsNotEnrolled() {
        let result = check(.deviceOwnerAuthenticationWithBiometrics, facts: noFinger)
        #expect(result.code == .biometryNotEnrolled)
        #expect(result.biometryType == .touchID)
    }

    @Test func canEvaluate_biometrics_whenFingersAreOnlyOnAnUnpluggedReader_failsDisconnected() {
        let facts = EvaluationFacts(enrolledFingers: [], enrolledOnlyOnAbsentReaders: true)
        #expect(check(.deviceOwnerAuthenticationWithBiometrics, facts: facts).code == .biometryDisconnected)
    }

    @Test func canEvaluate_biometrics_whenLocked_failsLockout() {
        var state = withPasscode
        state.biometryLocked = true
        #expect(check(.deviceOwnerAuthenticationWithBiometrics, state: state).code == .biometryLockout)
    }

    @Test func canEvaluate_deviceOwner_whenLockedWithPasscode_succeeds() {
        var state = withPasscode
        state.biometryLocked = true
        #expect(check(.deviceOwnerAuthentication, state: state).code == .success)
        #expect(check(.deviceOwnerAuthentication, facts: noReader).code == .success)
    }

    @Test func canEvaluate_deviceOwner_whenNothingUsable_failsPasscodeNotSet() {
        var state = UserAuthState()
        state.biometryLocked = true
        #expect(check(.deviceOwnerAuthentication, state: state).code == .passcodeNotSet)
        #expect(
            check(.deviceOwnerAuthentication, state: UserAuthState(), facts: noFinger).code == .passcodeNotSet)
        #expect(check(.deviceOwnerAuthentication, state: UserAuthState()).code == .success)
    }

    @Test(arguments: PolicyKind.allCases)
    func canEvaluate_whenStateUnreadable_failsClosed(policy: PolicyKind) {
        let facts = EvaluationFacts(enrolledFingers: [rightIndex], stateReadable: false)
        let result = check(policy, facts: facts)
        #expect(result.code == .biometryNotAvailable)
        #expect(result.message == "Stored authentication state is unreadable; ask an administrator")
        #expect(result.domainState == nil)
        #expect(result.biometryLocked == true)
    }

    @Test func biometryType_whenReaderPresent_isTouchID() {
        #expect(PolicyEvaluator.biometryType(readerAvailable: true) == .touchID)
        #expect(PolicyEvaluator.biometryType(readerAvailable: false) == .none)
    }
}
