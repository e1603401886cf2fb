// SPDX-License-Identifier: Apache-2.0
// Written as Apple's documentation shows LARight and LARightStore (macOS 13+) and LAEnvironment (macOS 15),
// in Apple's Swift spellings (`secret.rawData`, `publicKey.bytes`, `LAEnvironment.Observer`,
// `LAEnvironment.State`): it must compile unchanged. Every declaration of docs/apple-api.md is used in
// AppleSpellings.swift.
import Foundation
import LocalAuthentication

enum VaultError: Error { case cannotSign }

/// A secret and a signing key that only the owner's finger releases.
final class SecretVault: @unchecked Sendable {
    let identifier = "com.example.vault"

    func store(_ secret: Data) async throws {
        let right = LARight(requirement: .biometry(fallback: .devicePasscode))
        _ = try await LARightStore.shared.saveRight(right, identifier: identifier, secret: secret)
    }

    func load() async throws -> Data {
        let right = try await LARightStore.shared.right(forIdentifier: identifier)
        try await right.authorize(localizedReason: "Access your vault")
        return try await right.secret.rawData
    }

    func sign(_ data: Data) async throws -> Data {
        let right = try await LARightStore.shared.right(forIdentifier: identifier)
        try await right.authorize(localizedReason: "Sign the transfer")
        guard right.key.canSign(using: .ecdsaSignatureMessageX962SHA256) else { throw VaultError.cannotSign }
        return try await right.key.sign(data, algorithm: .ecdsaSignatureMessageX962SHA256)
    }

    func publicKey() async throws -> Data {
        try await LARightStore.shared.right(forIdentifier: identifier).key.publicKey.bytes
    }

    /// The completion-handler style of Apple's Objective-C samples, imported into Swift.
    func load(completion: @escaping @Sendable (Data?) -> Void) {
        LARightStore.shared.right(forIdentifier: identifier) { right, error in
            guard let right else { return completion(nil) }
            right.authorize(localizedReason: "Access your vault") { error in
                guard error == nil else { return completion(nil) }
                right.secret.loadData { data, _ in completion(data) }
            }
        }
    }

    func reset() async throws {
        try await LARightStore.shared.removeRight(forIdentifier: identifier)
    }

    /// A right that is not persisted: "is the owner here?" with a requirement.
    func confirm() async -> Bool {
        let right = LARight(requirement: .biometryCurrentSet)
        do {
            try await right.checkCanAuthorize()
            try await right.authorize(localizedReason: "Confirm")
            return right.state == .authorized
        } catch let error as LAError where error.code == .biometryNotAvailable {
            return false
        } catch {
            return false
        }
    }
}

/// Written as Apple's macOS 15 `LAEnvironment` samples: which mechanisms are there, told of changes.
final class MechanismsModel: NSObject, LAEnvironment.Observer, @unchecked Sendable {
    private(set) var summary = ""

    func start() {
        LAEnvironment.currentUser.addObserver(self)
        update(LAEnvironment.currentUser.state)
    }

    func stop() { LAEnvironment.currentUser.removeObserver(self) }

    func environment(_ environment: LAEnvironment, stateDidChangeFromOldState oldState: LAEnvironment.State) {
        update(environment.state)
    }

    private func update(_ state: LAEnvironment.State) {
        var parts: [String] = []
        if let biometry = state.biometry {
            if biometry.builtInSensorInaccessible {
                parts.append("\(biometry.localizedName): lid closed")
            } else {
                parts.append("\(biometry.localizedName): \(biometry.isEnrolled ? "enrolled" : "not enrolled")")
            }
            if biometry.isLockedOut { parts.append("locked out") }
        }
        if let password = state.userPassword, password.isSet { parts.append("password set") }
        for mechanism in state.allMechanisms where !mechanism.isUsable {
            parts.append("\(mechanism.localizedName) unusable")
        }
        summary = parts.joined(separator: ", ")
    }
}

/// `setCredential` as Apple's samples use it before an evaluation.
func unlockWithAppPassword(_ password: String) async -> Bool {
    let context = LAContext()
    guard context.setCredential(Data(password.utf8), type: .applicationPassword),
        context.isCredentialSet(.applicationPassword)
    else { return false }
    return (try? await context.evaluatePolicy(.deviceOwnerAuthentication, localizedReason: "Unlock")) ?? false
}
