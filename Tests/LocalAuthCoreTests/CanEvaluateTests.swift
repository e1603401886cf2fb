// SPDX-License-Identifier: Apache-2.0

import LocalAuthCore
import LocalAuthProtocol
import Testing

/// Rows Q1–Q8 of docs/policy.md: canEvaluatePolicy and biometryType, which never prompt.
@Suite struct CanEvaluateTests {
    func check(_ policy: PolicyKind, state: UserAuthState = withPasscode, facts: EvaluationFacts = oneFinger) -> Result
    {
        PolicyEvaluator.canEvaluate(policy: policy, state: state, facts: facts, config: LockoutConfig(), nowMs: t0)
    }

    @Test(arguments: PolicyKind.allCases)
    func canEvaluate_whenFingerUsable_succeedsWithTypeAndDomainState(policy: PolicyKind) {
        let result = check(policy)
        #expect(result.resultCode == .success)
        #expect(result.fields.int(.biometryType) == BiometryKind.touchID.rawValue)
        #expect(result.fields.bytes(.domainState) == [1, 2, 3])
        #expect(result.extra.count == 2)
    }

    @Test func canEvaluate_biometrics_whenNoReader_failsNotAvailable() {
        let result = check(.deviceOwnerAuthenticationWithBiometrics, facts: noReader)
        #expect(result.resultCode == .biometryNotAvailable)
        #expect(result.message == "Fingerprint not available: the laptop lid is closed")
        #expect(result.fields.int(.biometryType) == BiometryKind.none.rawValue)
        #expect(result.fields.bytes(.domainState) == nil)
    }

    @Test func canEvaluate_biometrics_whenNotEnrolled_failsNotEnrolled() {
        let result = check(.deviceOwnerAuthenticationWithBiometrics, facts: noFinger)
        #expect(result.resultCode == .biometryNotEnrolled)
        #expect(result.fields.int(.biometryType) == BiometryKind.touchID.rawValue)
    }

    @Test func canEvaluate_biometrics_whenFingersAreOnlyOnAnUnpluggedReader_failsDisconnected() {
        let facts = EvaluationFacts(readerAvailable: true, enrolledFingers: [], enrolledOnlyOnAbsentReaders: true)
        #expect(check(.deviceOwnerAuthenticationWithBiometrics, facts: facts).resultCode == .biometryDisconnected)
    }

    @Test func canEvaluate_biometrics_whenLocked_failsLockout() {
        var state = withPasscode
        state.biometryLocked = true
        #expect(check(.deviceOwnerAuthenticationWithBiometrics, state: state).resultCode == .biometryLockout)
    }

    @Test func canEvaluate_deviceOwner_whenLockedWithPasscode_succeeds() {
        var state = withPasscode
        state.biometryLocked = true
        #expect(check(.deviceOwnerAuthentication, state: state).resultCode == .success)
        #expect(check(.deviceOwnerAuthentication, facts: noReader).resultCode == .success)
    }

    @Test func canEvaluate_deviceOwner_whenNothingUsable_failsPasscodeNotSet() {
        var state = UserAuthState()
        state.biometryLocked = true
        #expect(check(.deviceOwnerAuthentication, state: state).resultCode == .passcodeNotSet)
        #expect(
            check(.deviceOwnerAuthentication, state: UserAuthState(), facts: noFinger).resultCode == .passcodeNotSet)
        #expect(check(.deviceOwnerAuthentication, state: UserAuthState()).resultCode == .success)
    }

    @Test(arguments: PolicyKind.allCases)
    func canEvaluate_whenStateUnreadable_failsClosed(policy: PolicyKind) {
        let facts = EvaluationFacts(readerAvailable: true, enrolledFingers: [rightIndex], stateReadable: false)
        let result = check(policy, facts: facts)
        #expect(result.resultCode == .biometryNotAvailable)
        #expect(result.message == "Stored authentication state is unreadable; ask an administrator")
        #expect(result.fields.bytes(.domainState) == nil)
    }

    @Test func biometryType_whenReaderPresent_isTouchID() {
        #expect(PolicyEvaluator.biometryType(readerAvailable: true) == .touchID)
        #expect(PolicyEvaluator.biometryType(readerAvailable: false) == .none)
    }
}
