// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The state of the policy domain, as `LAContext.domainState` reports it (Apple's newer shape of
/// `evaluatedPolicyDomainState`). Linux has no companion devices, so there is no `companion` member.
public final class LADomainState: NSObject, @unchecked Sendable {
    /// The biometric part: the biometry type and the hash of the enrolled fingers.
    public let biometry: LADomainStateBiometry

    /// The combined hash of every part; on Linux the biometric hash alone.
    public var stateHash: Data? { biometry.stateHash }

    init(biometry: LADomainStateBiometry) {
        self.biometry = biometry
    }
}

/// The biometric part of `LADomainState`.
public final class LADomainStateBiometry: NSObject, @unchecked Sendable {
    /// The biometry the device has (`touchID` with a fingerprint reader).
    public let biometryType: LABiometryType

    /// Changes exactly when the user's set of enrolled fingers changes; nil when none is enrolled.
    /// It reveals nothing about the prints.
    public let stateHash: Data?

    init(biometryType: LABiometryType, stateHash: Data?) {
        self.biometryType = biometryType
        self.stateHash = stateHash
    }
}
