// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The policies a context evaluates; Apple's case names, aliases and raw values.
///
/// As in Apple's Swift interface, the macOS 10.15 names `deviceOwnerAuthenticationWithWatch` (3) and
/// `deviceOwnerAuthenticationWithBiometricsOrWatch` (4) are the cases (deprecated), and their macOS 15
/// names `deviceOwnerAuthenticationWithCompanion` and `deviceOwnerAuthenticationWithBiometricsOrCompanion`
/// are static properties of the same values, so an exhaustive `switch` written for Apple compiles here.
///
/// On Linux there is no companion device (Apple Watch, Mac): `deviceOwnerAuthenticationWithCompanion`
/// fails with `LAError.Code.companionNotAvailable`, and `deviceOwnerAuthenticationWithBiometricsOrCompanion`
/// is evaluated as `deviceOwnerAuthenticationWithBiometrics`, as Apple's systems do when no companion is near.
public enum LAPolicy: Int, Sendable, Hashable {
    /// A fingerprint, nothing else.
    case deviceOwnerAuthenticationWithBiometrics = 1
    /// A fingerprint when one can be used, otherwise (or after the fallback) the user's passcode.
    case deviceOwnerAuthentication = 2
    /// A companion device; never available on Linux.
    @available(*, deprecated, renamed: "deviceOwnerAuthenticationWithCompanion")
    case deviceOwnerAuthenticationWithWatch = 3
    /// A fingerprint or a companion device; on Linux the same as `deviceOwnerAuthenticationWithBiometrics`.
    @available(*, deprecated, renamed: "deviceOwnerAuthenticationWithBiometricsOrCompanion")
    case deviceOwnerAuthenticationWithBiometricsOrWatch = 4

    /// A companion device; never available on Linux (raw value 3).
    public static var deviceOwnerAuthenticationWithCompanion: LAPolicy { LAPolicy(rawValue: 3)! }

    /// A fingerprint or a companion device (raw value 4); on Linux the same as
    /// `deviceOwnerAuthenticationWithBiometrics`.
    public static var deviceOwnerAuthenticationWithBiometricsOrCompanion: LAPolicy { LAPolicy(rawValue: 4)! }
}

/// The kind of biometry a device has; Apple's case names and raw values. A fingerprint reader is `touchID`.
public enum LABiometryType: Int, Sendable, Hashable {
    case none = 0
    case touchID = 1
    case faceID = 2
    case opticID = 4

    @available(*, deprecated, renamed: "none")
    public static var LABiometryNone: LABiometryType { .none }
}

/// The longest reuse window `touchIDAuthenticationAllowableReuseDuration` honours: 5 minutes.
public let LATouchIDAuthenticationMaximumAllowableReuseDuration: TimeInterval = 300

/// The kinds of credential an app can set on a context; Apple's case names and raw values.
public enum LACredentialType: Int, Sendable, Hashable {
    /// An app-provided password: on Linux, the passcode the context gives the daemon when asked.
    case applicationPassword = 0
    /// A smart card's PIN; not supported on Linux (`setCredential` returns false).
    case smartCardPIN = -3
}
