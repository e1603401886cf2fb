// SPDX-License-Identifier: Apache-2.0
import LocalAuthProtocol

/// Exit codes a script can rely on; listed in `--help`.
enum Exit {
    static let success: Int32 = 0
    static let failed: Int32 = 1  // no match, wrong passcode, cancelled
    static let unavailable: Int32 = 2  // no reader, nothing enrolled, locked out, no passcode
    static let notAuthorized: Int32 = 3
    static let unreachable: Int32 = 4  // daemon not running or not speaking the protocol
    static let refused: Int32 = 5  // invalid request, not found, already enrolled, busy, timed out, internal error

    static func code(for result: Int64) -> Int32 {
        switch ResultCode(rawValue: result) {
        case .success: success
        case .authenticationFailed, .userCancel, .userFallback, .systemCancel, .appCancel: failed
        case .biometryNotAvailable, .biometryNotEnrolled, .biometryLockout, .biometryDisconnected, .passcodeNotSet,
            .notInteractive, .invalidContext:
            unavailable
        case .notAuthorized: notAuthorized
        case .invalidRequest, .notFound, .busy, .alreadyEnrolled, .internalError, .notSupported, .timedOut, nil: refused
        }
    }
}
