// SPDX-License-Identifier: Apache-2.0
//
// Written as code for Apple's platforms is written, with nothing Linux-specific: this file must compile
// unchanged against Apple's LocalAuthentication and against this library. Do not adapt it to the library;
// adapt the library to it.
import Foundation
import LocalAuthentication

@MainActor
final class BiometricLogin {
    enum State: Equatable {
        case locked
        case unlocked
        case failed(String)
    }

    private(set) var state = State.locked
    private let context: LAContext

    init(context: LAContext = LAContext()) {
        self.context = context
        context.localizedFallbackTitle = "Use Password"
        context.localizedCancelTitle = "Not Now"
        context.touchIDAuthenticationAllowableReuseDuration = LATouchIDAuthenticationMaximumAllowableReuseDuration
    }

    /// The button's text, which names the biometry once `canEvaluatePolicy` has been asked.
    var loginButtonTitle: String {
        var error: NSError?
        context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error)
        switch context.biometryType {
        case .none: return "Log In"
        case .touchID: return "Log In with Touch ID"
        case .faceID: return "Log In with Face ID"
        case .opticID: return "Log In with Optic ID"
        @unknown default: return "Log In"
        }
    }

    /// The completion-handler style: the reply comes on a private queue and hops to the main queue.
    func logIn(completion: @escaping @MainActor (State) -> Void) {
        var error: NSError?
        guard context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error) else {
            let message = error.map { Self.message(for: $0) } ?? "Biometry is unavailable"
            state = .failed(message)
            completion(state)
            return
        }
        context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "Log in to your account") {
            success, authenticationError in
            DispatchQueue.main.async {
                if success {
                    self.state = .unlocked
                } else {
                    self.state = .failed(authenticationError.map { Self.message(for: $0) } ?? "Failed")
                }
                completion(self.state)
            }
        }
    }

    /// The async style, started from a `Task`.
    func logInAsync() -> Task<State, Never> {
        let context = self.context
        return Task {
            do {
                let success = try await context.evaluatePolicy(
                    .deviceOwnerAuthentication, localizedReason: "Log in to your account")
                state = success ? .unlocked : .failed("Failed")
            } catch {
                state = .failed(Self.message(for: error))
            }
            return state
        }
    }

    func logOut() {
        context.invalidate()
        state = .locked
    }

    /// Every LAError.Code, as Apple's samples spell them out.
    nonisolated static func message(for error: Error) -> String {
        guard let error = error as? LAError else {
            let nsError = error as NSError
            guard nsError.domain == LAErrorDomain, let code = LAError.Code(rawValue: nsError.code) else {
                return error.localizedDescription
            }
            return message(for: LAError(code))
        }
        switch error.code {
        case .authenticationFailed: return "There was a problem verifying your identity."
        case .userCancel: return "You pressed cancel."
        case .userFallback: return "You pressed password."
        case .systemCancel: return "The system cancelled."
        case .passcodeNotSet: return "A passcode is not set."
        case .biometryNotAvailable: return "Biometry is not available."
        case .biometryNotEnrolled: return "Biometry is not set up."
        case .biometryLockout: return "Biometry is locked out."
        case .appCancel: return "The app cancelled."
        case .invalidContext: return "The context is invalid."
        case .companionNotAvailable: return "No companion device is available."
        case .biometryNotPaired: return "No biometric accessory is paired."
        case .biometryDisconnected: return "The biometric accessory is disconnected."
        case .invalidDimensions: return "Invalid dimensions."
        case .notInteractive: return "Not interactive."
        default: return "Unknown error: \(error.localizedDescription)"
        }
    }

    /// The older, integer style: comparing `code` with the raw values.
    nonisolated static func legacyMessage(forCode code: Int) -> String {
        switch code {
        case LAError.authenticationFailed.rawValue: return "Authentication failed"
        case LAError.userCancel.rawValue: return "User cancelled"
        case LAError.biometryLockout.rawValue: return "Locked out"
        case LAError.biometryNotEnrolled.rawValue: return "Not enrolled"
        case LAError.biometryNotAvailable.rawValue: return "Not available"
        default: return "Other (\(code))"
        }
    }
}

/// A test double, as Apple-platform tests subclass `LAContext` (which is `Sendable` here: a subclass
/// says again that it is, unchecked, as Swift 6 asks of a subclass of an unchecked class).
final class FakeContext: LAContext, @unchecked Sendable {
    var canEvaluate = true
    var outcome: (Bool, Error?) = (true, nil)
    var fakeBiometryType = LABiometryType.touchID

    override var biometryType: LABiometryType { fakeBiometryType }

    override func canEvaluatePolicy(_ policy: LAPolicy, error: NSErrorPointer) -> Bool {
        if !canEvaluate {
            error?.pointee = LAError(.biometryNotEnrolled) as NSError
        }
        return canEvaluate
    }

    override func evaluatePolicy(
        _ policy: LAPolicy, localizedReason: String, reply: @escaping @Sendable (Bool, Error?) -> Void
    ) {
        let (success, error) = outcome
        DispatchQueue.global().async { reply(success, error) }
    }
}
