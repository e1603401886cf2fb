// SPDX-License-Identifier: Apache-2.0

/// `code` of a RESULT: 0 for success, Apple's `LAError.Code` values, and the daemon's own
/// management codes (−11xx), which Apple's API has no names for.
public enum ResultCode: Int64, Sendable, CaseIterable {
    case success = 0
    case authenticationFailed = -1
    case userCancel = -2
    case userFallback = -3
    case systemCancel = -4
    case passcodeNotSet = -5
    case biometryNotAvailable = -6
    case biometryNotEnrolled = -7
    case biometryLockout = -8
    case appCancel = -9
    case invalidContext = -10
    case biometryDisconnected = -13
    case notInteractive = -1004
    case notAuthorized = -1100
    case invalidRequest = -1101
    case notFound = -1102
    case busy = -1103
    case alreadyEnrolled = -1104
    case internalError = -1105
    case notSupported = -1106
    case timedOut = -1107

    /// The name used in logs, the CLI and the docs.
    public var name: String {
        switch self {
        case .success: "success"
        case .authenticationFailed: "authenticationFailed"
        case .userCancel: "userCancel"
        case .userFallback: "userFallback"
        case .systemCancel: "systemCancel"
        case .passcodeNotSet: "passcodeNotSet"
        case .biometryNotAvailable: "biometryNotAvailable"
        case .biometryNotEnrolled: "biometryNotEnrolled"
        case .biometryLockout: "biometryLockout"
        case .appCancel: "appCancel"
        case .invalidContext: "invalidContext"
        case .biometryDisconnected: "biometryDisconnected"
        case .notInteractive: "notInteractive"
        case .notAuthorized: "notAuthorized"
        case .invalidRequest: "invalidRequest"
        case .notFound: "notFound"
        case .busy: "busy"
        case .alreadyEnrolled: "alreadyEnrolled"
        case .internalError: "internalError"
        case .notSupported: "notSupported"
        case .timedOut: "timedOut"
        }
    }
}

/// `policy`: Apple's `LAPolicy` raw values, and the passcode alone (a right's `devicePasscode`
/// requirement, which Apple's `LAPolicy` has no value for).
public enum PolicyKind: Int64, Sendable, CaseIterable {
    case deviceOwnerAuthenticationWithBiometrics = 1
    case deviceOwnerAuthentication = 2
    case devicePasscode = 3
}

/// `requirement` of a right: Apple's `LAAuthenticationRequirement`s that Linux can meet.
public enum RightRequirement: Int64, Sendable, CaseIterable {
    /// `.biometry`: any enrolled finger.
    case biometryAny = 1
    /// `.biometryCurrentSet`: a finger of the set enrolled when the right was saved; the right is
    /// destroyed when the set changes.
    case biometryCurrentSet = 2
    /// `.biometry(fallback: .devicePasscode)` and `.default`: a finger, or the passcode.
    case biometryOrPasscode = 3
    /// The passcode alone.
    case devicePasscode = 4

    /// The policy whose evaluation meets the requirement.
    public var policy: PolicyKind {
        switch self {
        case .biometryAny, .biometryCurrentSet: .deviceOwnerAuthenticationWithBiometrics
        case .biometryOrPasscode: .deviceOwnerAuthentication
        case .devicePasscode: .devicePasscode
        }
    }
}

/// `operation` of RIGHT_USE: what the daemon does with the right once its requirement is met.
public enum RightOperation: Int64, Sendable, CaseIterable {
    /// Nothing but the evaluation (`LARight.authorize`).
    case authorize = 1
    /// Return the secret (`LASecret.loadData`).
    case loadSecret = 2
    /// Sign `data` with the private key.
    case sign = 3
    /// Decrypt `data` with the private key.
    case decrypt = 4
    /// Key agreement with the public key in `data`.
    case exchangeKeys = 5
    /// Drops the calling process's authorization of the right (`LARight.deauthorize`); asks no one.
    case deauthorize = 6
}

/// `biometryType`: Apple's `LABiometryType` raw values.
public enum BiometryKind: Int64, Sendable {
    case none = 0
    case touchID = 1
}

/// `event` of an EVENT frame.
public enum EventKind: Int64, Sendable, CaseIterable {
    case placeFinger = 1
    case retry = 2
    case noMatch = 3
    case enrollStage = 4
    case passcodeNeeded = 5
    case fallbackAvailable = 6
    case biometryLocked = 7
    case passcodeWrong = 8
    case info = 9
    /// WATCH: the watched environment may have changed (and, first, the watch is in place).
    case environmentChanged = 10
}

/// `hint` of a retry EVENT.
public enum RetryHint: Int64, Sendable, CaseIterable {
    case general = 0
    case tooShort = 1
    case centerFinger = 2
    case removeFinger = 3

    public var message: String { text(EnglishText()) }
}

/// `flags` bits.
public struct RequestFlags: OptionSet, Sendable {
    public let rawValue: Int64
    public init(rawValue: Int64) { self.rawValue = rawValue }
    public static let interactionNotAllowed = RequestFlags(rawValue: 1 << 0)
    public static let all = RequestFlags(rawValue: 1 << 1)
    public static let passcodeCapable = RequestFlags(rawValue: 1 << 2)
}

/// `capabilities` bits of a device.
public struct DeviceCapabilities: OptionSet, Sendable {
    public let rawValue: Int64
    public init(rawValue: Int64) { self.rawValue = rawValue }
    public static let identify = DeviceCapabilities(rawValue: 1 << 0)
    public static let storage = DeviceCapabilities(rawValue: 1 << 1)
    public static let swipe = DeviceCapabilities(rawValue: 1 << 2)
}

/// Finger names as fprintd spells them.
public enum FingerName: String, Sendable, CaseIterable {
    case leftThumb = "left-thumb"
    case leftIndex = "left-index-finger"
    case leftMiddle = "left-middle-finger"
    case leftRing = "left-ring-finger"
    case leftLittle = "left-little-finger"
    case rightThumb = "right-thumb"
    case rightIndex = "right-index-finger"
    case rightMiddle = "right-middle-finger"
    case rightRing = "right-ring-finger"
    case rightLittle = "right-little-finger"

    /// "right index finger", for prompts.
    public var spoken: String { rawValue.replacingOccurrences(of: "-", with: " ") }
}

extension String {
    fileprivate func replacingOccurrences(of a: Character, with b: Character) -> String {
        String(map { $0 == a ? b : $0 })
    }
}
