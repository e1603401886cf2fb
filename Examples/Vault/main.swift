// SPDX-License-Identifier: Apache-2.0
//
// vault: a small terminal vault that unlocks with LAContext — written as an app for Apple's platforms is
// written, against the same API. Commands (one a line): unlock, lock, show, reset, quit.
//
// Its key lives in an LAPersistedRight (LARightStore, kept by localauthd and sealed to the machine),
// bound to the fingers enrolled when it was made (`.biometryCurrentSet`): the first unlock with a finger
// makes it, later unlocks have the right's finger release it, and when the enrolled fingers change the
// daemon destroys it — the vault then says its key is gone, as on Apple's systems.
//
//     LOCALAUTHD_SOCKET="$dir/socket" .build/release/vault   (the daemon of README.md's trial)
import Foundation
import LocalAuthentication

/// The vault's state and its LocalAuthentication calls.
@MainActor
final class Vault {
    private(set) var isUnlocked = false
    private var context = LAContext()
    /// The right that holds the vault key, and one that only says a key was made (it survives the key).
    let keyIdentifier = "com.example.vault.key"
    let madeIdentifier = "com.example.vault.made"
    private(set) var key: Data?
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

    /// Unlocks with the key's right when there is one; says so when the key is gone; otherwise the
    /// classic LAContext evaluation, which makes the key on its first success with a finger.
    func unlock() async -> String {
        let store = LARightStore.shared
        if let right = try? await store.right(forIdentifier: keyIdentifier) {
            do {
                try await right.authorize(localizedReason: "Unlock your vault")
                key = try await right.secret.rawData
                isUnlocked = true
                return "Vault unlocked with its key (\(key?.count ?? 0) bytes, released by your finger)."
            } catch let error as LAError {
                return message(for: error)
            } catch {
                return "Vault still locked: \(error.localizedDescription)"
            }
        }
        if (try? await store.right(forIdentifier: madeIdentifier)) != nil {
            return
                "The vault's key is gone: your enrolled fingers changed since it was made. `reset` makes a new vault."
        }
        let outcome = await unlockWithContext()
        if isUnlocked, await makeKey() {
            return outcome + " Its key is now kept by localauthd, for the fingers enrolled now."
        }
        return outcome
    }

    /// A new random key in a right bound to the current fingers; false when no finger can be used.
    private func makeKey() async -> Bool {
        guard LAContext().canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil) else { return false }
        var generator = SystemRandomNumberGenerator()
        let fresh = Data((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        do {
            _ = try await LARightStore.shared.saveRight(
                LARight(requirement: .biometryCurrentSet), identifier: keyIdentifier, secret: fresh)
            _ = try await LARightStore.shared.saveRight(LARight(requirement: .biometry), identifier: madeIdentifier)
            key = fresh
            return true
        } catch {
            return false
        }
    }

    /// Forgets the vault: its key (if any) and the note that one was made.
    func reset() async -> String {
        try? await LARightStore.shared.removeRight(forIdentifier: keyIdentifier)
        try? await LARightStore.shared.removeRight(forIdentifier: madeIdentifier)
        key = nil
        isUnlocked = false
        return "The vault was reset; the next unlock makes a new key."
    }

    /// Unlocks with a finger, or the passcode when no finger can be used; returns what to tell the user.
    private func unlockWithContext() async -> String {
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
        key = nil
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
        default: return "Vault still locked: \(error.localizedDescription)"
        }
    }
}

let vault = Vault()
print("Vault — your secrets, behind LAContext.")
while true {
    let menu =
        vault.isUnlocked
        ? "[show] Show secrets   [lock] Lock   [quit] Quit"
        : "[unlock] \(vault.unlockButtonTitle)   [reset] Forget the key   [quit] Quit"
    print(menu)
    print("> ", terminator: "")
    fflush(nil)  // the prompt has no newline
    guard let line = readLine() else { break }
    switch line.trimmingCharacters(in: .whitespaces).lowercased() {
    case "unlock", "u": print(await vault.unlock())
    case "lock", "l": print(vault.lock())
    case "show", "s": print(vault.show())
    case "reset": print(await vault.reset())
    case "quit", "q": exit(0)
    case "": continue
    default: print("Unknown command '\(line)'.")
    }
}
