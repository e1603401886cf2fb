// SPDX-License-Identifier: Apache-2.0
import LocalAuthDaemon
import LocalAuthProtocol
import LocalAuthSystemd

/// fprintd's D-Bus names (its `src/net.reactivated.Fprint.*.xml` and `fprintd.h`), and the one place
/// where the daemon's results and events become them.
enum Fprintd {
    static let busName = "net.reactivated.Fprint"
    static let root = "/net/reactivated/Fprint"
    static let managerPath = "/net/reactivated/Fprint/Manager"
    static let managerInterface = "net.reactivated.Fprint.Manager"
    static let deviceInterface = "net.reactivated.Fprint.Device"

    static func devicePath(_ index: Int) -> String { "/net/reactivated/Fprint/Device/\(index)" }

    /// fprintd's polkit actions (`net.reactivated.fprint.device.policy`).
    enum Action: String, CaseIterable, Sendable {
        case verify = "net.reactivated.fprint.device.verify"
        case enroll = "net.reactivated.fprint.device.enroll"
        case setUsername = "net.reactivated.fprint.device.setusername"
    }

    /// fprintd's error names (`FprintError`), each with the message it answers.
    enum ErrorName: String, CaseIterable, Sendable {
        case claimDevice = "net.reactivated.Fprint.Error.ClaimDevice"
        case alreadyInUse = "net.reactivated.Fprint.Error.AlreadyInUse"
        case `internal` = "net.reactivated.Fprint.Error.Internal"
        case permissionDenied = "net.reactivated.Fprint.Error.PermissionDenied"
        case noEnrolledPrints = "net.reactivated.Fprint.Error.NoEnrolledPrints"
        case fingerAlreadyEnrolled = "net.reactivated.Fprint.Error.FingerAlreadyEnrolled"
        case noActionInProgress = "net.reactivated.Fprint.Error.NoActionInProgress"
        case invalidFingername = "net.reactivated.Fprint.Error.InvalidFingername"
        case noSuchDevice = "net.reactivated.Fprint.Error.NoSuchDevice"
        case printsNotDeleted = "net.reactivated.Fprint.Error.PrintsNotDeleted"
        case printsNotDeletedFromDevice = "net.reactivated.Fprint.Error.PrintsNotDeletedFromDevice"

        func callAsFunction(_ message: String) -> BusError { BusError(name: rawValue, message: message) }
    }

    /// A finger argument: one of the ten names, "any" (or empty: any finger), or invalid.
    enum FingerArgument: Equatable, Sendable {
        case any
        case finger(FingerName)
        case invalid

        /// The one finger named; nil for any.
        var name: FingerName? {
            if case .finger(let finger) = self { finger } else { nil }
        }

        init(_ name: String) {
            if name.isEmpty || name == "any" {
                self = .any
            } else if let finger = FingerName(rawValue: name) {
                self = .finger(finger)
            } else {
                self = .invalid
            }
        }
    }

    /// `VerifyStatus` for a retry hint: the verification goes on.
    static func verifyRetryName(_ hint: RetryHint?) -> String {
        switch hint {
        case .tooShort: "verify-swipe-too-short"
        case .centerFinger: "verify-finger-not-centered"
        case .removeFinger: "verify-remove-and-retry"
        case .general, nil: "verify-retry-scan"
        }
    }

    /// `EnrollStatus` for a retry hint: the enrolment goes on.
    static func enrollRetryName(_ hint: RetryHint?) -> String {
        switch hint {
        case .tooShort: "enroll-swipe-too-short"
        case .centerFinger: "enroll-finger-not-centered"
        case .removeFinger: "enroll-remove-and-retry"
        case .general, nil: "enroll-retry-scan"
        }
    }

    /// The final `VerifyStatus` of a finished evaluation (fprintd's `verify_result_to_name`: a
    /// protocol error is "disconnected", a print the reader does not hold a no-match).
    static func verifyResultName(_ result: Answer) -> String {
        switch result.readerFailure {
        case .communication: return "verify-disconnected"
        case .dataNotFound: return "verify-no-match"
        case .noDevice, .removed, .busy, .cancelled, .dataInvalid, .dataFull, .notSupported, .other:
            return "verify-unknown-error"
        case nil: break
        }
        switch result.code {
        case .success: return "verify-match"
        // A miss that locked biometrics is still a miss for this scan.
        case .authenticationFailed, .biometryLockout, .userCancel, .appCancel, .timedOut: return "verify-no-match"
        default: return "verify-unknown-error"
        }
    }

    /// The final `EnrollStatus` of a finished enrolment (fprintd's `enroll_result_to_name`).
    static func enrollResultName(_ result: Answer) -> String {
        switch result.readerFailure {
        case .communication: return "enroll-disconnected"
        case .dataFull: return "enroll-data-full"
        case .noDevice, .removed, .busy, .cancelled, .dataInvalid, .dataNotFound, .notSupported, .other:
            return "enroll-unknown-error"
        case nil: break
        }
        switch result.code {
        case .success: return "enroll-completed"
        // The door replaces a finger enrolled again, so only the duplicate check answers this.
        case .alreadyEnrolled: return "enroll-duplicate"
        case .userCancel, .timedOut, .internalError, .notAuthorized, .authenticationFailed: return "enroll-failed"
        default: return "enroll-unknown-error"
        }
    }
}
