// SPDX-License-Identifier: Apache-2.0
//
// vault: a small terminal vault that unlocks with LAContext — written as an app for Apple's platforms is
// written, against the same API. Commands (one a line): unlock, lock, show, quit.
//
//     LOCALAUTHD_SOCKET="$dir/socket" .build/release/vault   (the daemon of README.md's trial)
import Foundation
import LocalAuthentication

/// The vault's state and its LocalAuthentication calls.
@MainActor
final class Vault {
    private(set) var isUnlocked = false
    private var context = LAContext()
    private let secrets = [
        "Wi-Fi: correct-horse-battery-staple",
        "Bank PIN: 4711",
        "Safe combination: 12-34-56",
    ]

    /// The unlock button's text names the biometry, which is known after `canEvaluatePolicy`.
    var unlockButtonTitle: String {
        let context = LAContext()
        _ = context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil)
        switch context.biometryType {
        case .touchID: return "Unlock with Touch ID"
        case .faceID: return "Unlock with Face ID"
        case .opticID: return "Unlock with Optic ID"
        case .none: return "Unlock with Passcode"
        @unknown default: return "Unlock"
        }
    }

    /// Unlocks with a finger, or the passcode when no finger can be used; returns what to tell the user.
    func unlock() async -> String {
        // A fresh context for every attempt, as Apple recommends: an old one may have been invalidated.
        context = LAContext()
        context.localizedCancelTitle = "Keep Locked"
        var error: NSError?
        guard context.canEvaluatePolicy(.deviceOwnerAuthentication, error: &error) else {
            return message(for: error.map { LAError(_nsError: $0) })
        }
        do {
            if try await context.evaluatePolicy(.deviceOwnerAuthentication, localizedReason: "Unlock your vault") {
                isUnlocked = true
                return "Vault unlocked."
            }
            return "Vault still locked."
        } catch let error as LAError {
            return message(for: error)
        } catch {
            return "Vault still locked: \(error.localizedDescription)"
        }
    }

    func lock() -> String {
        context.invalidate()
        isUnlocked = false
        return "Vault locked."
    }

    func show() -> String {
        guard isUnlocked else { return "The vault is locked." }
        return secrets.map { "  " + $0 }.joined(separator: "\n")
    }

    /// Each LAError as a sentence for the person, as Apple's samples map them.
    func message(for error: LAError?) -> String {
        guard let error else { return "Vault still locked." }
        switch error.code {
        case .authenticationFailed: return "Vault still locked: we did not recognise you."
        case .userCancel: return "Vault still locked: you cancelled."
        case .userFallback: return "Vault still locked: you chose to enter a password instead."
        case .systemCancel: return "Vault still locked: the system cancelled (\(error.localizedDescription))."
        case .passcodeNotSet: return "Vault still locked: set a passcode first (localauthctl passcode set)."
        case .biometryNotAvailable: return "Vault still locked: no fingerprint reader can be used here."
        case .biometryNotEnrolled: return "Vault still locked: enrol a finger first (localauthctl enroll)."
        case .biometryLockout: return "Vault still locked: too many fingers did not match; use your passcode."
        case .appCancel: return "Vault still locked: the app cancelled."
        case .invalidContext: return "Vault still locked: the authentication context is no longer valid."
        case .companionNotAvailable: return "Vault still locked: no companion device is near."
        case .biometryNotPaired: return "Vault still locked: no biometric accessory is paired."
        case .biometryDisconnected: return "Vault still locked: the biometric accessory is disconnected."
        case .invalidDimensions: return "Vault still locked: the authentication view has invalid dimensions."
        case .notInteractive: return "Vault still locked: there is no way to ask for your passcode here."
        @unknown default: return "Vault still locked: \(error.localizedDescription)"
        }
    }
}

let vault = Vault()
print("Vault — your secrets, behind LAContext.")
while true {
    let menu =
        vault.isUnlocked
        ? "[show] Show secrets   [lock] Lock   [quit] Quit" : "[unlock] \(vault.unlockButtonTitle)   [quit] Quit"
    print(menu)
    print("> ", terminator: "")
    fflush(nil)  // the prompt has no newline
    guard let line = readLine() else { break }
    switch line.trimmingCharacters(in: .whitespaces).lowercased() {
    case "unlock", "u": print(await vault.unlock())
    case "lock", "l": print(vault.lock())
    case "show", "s": print(vault.show())
    case "quit", "q": exit(0)
    case "": continue
    default: print("Unknown command '\(line)'.")
    }
}
