// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Foundation's `NSErrorPointer`, which swift-corelibs-foundation does not declare (Apple's is an
/// `AutoreleasingUnsafeMutablePointer`, which needs the Objective-C runtime). `&error` for an `NSError?`
/// variable, and `nil`, are accepted as on Apple's systems.
public typealias NSErrorPointer = UnsafeMutablePointer<NSError?>?

/// The error domain of every `LAError`: Apple's value.
public let LAErrorDomain: String = "com.apple.LocalAuthentication"

/// An error of the LocalAuthentication framework, shaped as Apple's overlay shapes it: a struct wrapping an
/// `NSError` of `LAErrorDomain`, whose `code` is an `LAError.Code`. `(error as NSError).code`, `error._code`,
/// `error.localizedDescription`, `catch LAError.userCancel` and `catch let e as LAError` all work.
public struct LAError: _BridgedStoredNSError {
    public let _nsError: NSError

    public init(_nsError error: NSError) {
        precondition(error.domain == LAErrorDomain, "an LAError needs an NSError of LAErrorDomain")
        _nsError = error
    }

    public static var errorDomain: String { LAErrorDomain }
    public static var _nsErrorDomain: String { LAErrorDomain }

    /// Apple's `LAError.Code`: the same cases, aliases and raw values. As in Apple's Swift interface, the
    /// old names of −6, −7, −8 and −11 (`touchIDNotAvailable`, `touchIDNotEnrolled`, `touchIDLockout`,
    /// `watchNotAvailable`) are the cases (deprecated), and their current names (`biometryNotAvailable`,
    /// `biometryNotEnrolled`, `biometryLockout`, `companionNotAvailable`) static properties of the same
    /// values: an exhaustive `switch` written for Apple compiles here, and either name matches in a pattern.
    public enum Code: Int, Sendable, Hashable, _ErrorCodeProtocol {
        public typealias _ErrorType = LAError

        /// The user gave no valid credentials (a finger that does not match, a wrong passcode).
        case authenticationFailed = -1
        /// The user cancelled.
        case userCancel = -2
        /// The user chose the fallback.
        case userFallback = -3
        /// The system cancelled (on Linux: the request timed out, or the daemon went away).
        case systemCancel = -4
        /// No passcode is set (and no finger can be used).
        case passcodeNotSet = -5
        /// The old name of `biometryNotAvailable`.
        @available(*, deprecated, renamed: "biometryNotAvailable")
        case touchIDNotAvailable = -6
        /// The old name of `biometryNotEnrolled`.
        @available(*, deprecated, renamed: "biometryNotEnrolled")
        case touchIDNotEnrolled = -7
        /// The old name of `biometryLockout`.
        @available(*, deprecated, renamed: "biometryLockout")
        case touchIDLockout = -8
        /// The app cancelled (`invalidate()`).
        case appCancel = -9
        /// The context was invalidated before this call.
        case invalidContext = -10
        /// The old name of `companionNotAvailable`.
        @available(*, deprecated, renamed: "companionNotAvailable")
        case watchNotAvailable = -11
        /// Never reported on Linux; declared for source compatibility with macOS code.
        case biometryNotPaired = -12
        /// The user's fingers are enrolled only on a reader that is not connected (a USB reader unplugged).
        case biometryDisconnected = -13
        /// Never reported on Linux; declared for source compatibility with macOS code.
        case invalidDimensions = -14
        /// Interaction was needed but `interactionNotAllowed` is set, or nothing can ask for the passcode.
        case notInteractive = -1004

        /// No fingerprint reader can be used (none connected, the daemon unreachable, its state unreadable).
        public static var biometryNotAvailable: LAError.Code { Code(rawValue: -6)! }
        /// No finger is enrolled for the user.
        public static var biometryNotEnrolled: LAError.Code { Code(rawValue: -7)! }
        /// Too many fingers did not match; the passcode (or an administrator) unlocks it.
        public static var biometryLockout: LAError.Code { Code(rawValue: -8)! }
        /// No companion device is available (always on Linux).
        public static var companionNotAvailable: LAError.Code { Code(rawValue: -11)! }
    }

    public static var authenticationFailed: LAError.Code { .authenticationFailed }
    public static var userCancel: LAError.Code { .userCancel }
    public static var userFallback: LAError.Code { .userFallback }
    public static var systemCancel: LAError.Code { .systemCancel }
    public static var passcodeNotSet: LAError.Code { .passcodeNotSet }
    public static var biometryNotAvailable: LAError.Code { .biometryNotAvailable }
    public static var biometryNotEnrolled: LAError.Code { .biometryNotEnrolled }
    public static var biometryLockout: LAError.Code { .biometryLockout }
    public static var appCancel: LAError.Code { .appCancel }
    public static var invalidContext: LAError.Code { .invalidContext }
    public static var companionNotAvailable: LAError.Code { .companionNotAvailable }
    public static var biometryNotPaired: LAError.Code { .biometryNotPaired }
    public static var biometryDisconnected: LAError.Code { .biometryDisconnected }
    public static var invalidDimensions: LAError.Code { .invalidDimensions }
    public static var notInteractive: LAError.Code { .notInteractive }

    @available(*, deprecated, renamed: "biometryNotAvailable")
    public static var touchIDNotAvailable: LAError.Code { .biometryNotAvailable }
    @available(*, deprecated, renamed: "biometryNotEnrolled")
    public static var touchIDNotEnrolled: LAError.Code { .biometryNotEnrolled }
    @available(*, deprecated, renamed: "biometryLockout")
    public static var touchIDLockout: LAError.Code { .biometryLockout }
    @available(*, deprecated, renamed: "companionNotAvailable")
    public static var watchNotAvailable: LAError.Code { .companionNotAvailable }
}

extension LAError {
    /// `userInfo` key (Linux-only): the daemon's raw result code, when it had no `LAError.Code` of its own.
    static let daemonCodeKey = "LocalAuthDaemonResultCode"

    /// An error with the human line as its `localizedDescription`.
    init(_ code: Code, _ message: String, daemonCode: Int64? = nil) {
        var info: [String: Any] = [NSLocalizedDescriptionKey: message]
        if let daemonCode { info[Self.daemonCodeKey] = Int(daemonCode) }
        self.init(code, userInfo: info)
    }
}
