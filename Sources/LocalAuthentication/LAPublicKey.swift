// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthCrypto
import LocalAuthLocalization
import LocalAuthProtocol

/// Apple's `SecKeyAlgorithm` (a Security framework type), declared here for the algorithms an
/// `LAPrivateKey` offers on Linux, so `algorithm: .ecdsaSignatureMessageX962SHA256` compiles unchanged.
/// The raw value is the Swift name, not Apple's CFString.
public struct SecKeyAlgorithm: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let ecdsaSignatureMessageX962SHA256 = SecKeyAlgorithm(rawValue: "ecdsaSignatureMessageX962SHA256")
    public static let ecdsaSignatureMessageRFC4754SHA256 = SecKeyAlgorithm(
        rawValue: "ecdsaSignatureMessageRFC4754SHA256")
    public static let eciesEncryptionStandardVariableIVX963SHA256AESGCM = SecKeyAlgorithm(
        rawValue: "eciesEncryptionStandardVariableIVX963SHA256AESGCM")
    public static let eciesEncryptionCofactorVariableIVX963SHA256AESGCM = SecKeyAlgorithm(
        rawValue: "eciesEncryptionCofactorVariableIVX963SHA256AESGCM")
    public static let ecdhKeyExchangeStandard = SecKeyAlgorithm(rawValue: "ecdhKeyExchangeStandard")
    public static let ecdhKeyExchangeCofactor = SecKeyAlgorithm(rawValue: "ecdhKeyExchangeCofactor")
    public static let ecdhKeyExchangeStandardX963SHA256 = SecKeyAlgorithm(rawValue: "ecdhKeyExchangeStandardX963SHA256")
    public static let ecdhKeyExchangeCofactorX963SHA256 = SecKeyAlgorithm(rawValue: "ecdhKeyExchangeCofactorX963SHA256")

    var known: KeyAlgorithm? { KeyAlgorithm(rawValue: rawValue) }
}

/// Apple's `SecKeyKeyExchangeParameter` keys, for `exchangeKeys(publicKey:algorithm:parameters:)`.
public let kSecKeyKeyExchangeParameterRequestedSize = "requestedSize"
public let kSecKeyKeyExchangeParameterSharedInfo = "sharedInfo"

/// The public half of a right's key: Apple's `LAPublicKey`. Everything here runs in the app.
open class LAPublicKey: NSObject, @unchecked Sendable {
    let raw: [UInt8]

    init(bytes: [UInt8]) {
        self.raw = bytes
        super.init()
    }

    /// X9.63 (0x04 ‖ x ‖ y, 65 bytes), as `SecKeyCopyExternalRepresentation` gives it: Apple's async form
    /// of `exportBytes(completion:)` (`try await key.publicKey.bytes`).
    open var bytes: Data {
        get async throws { Data(raw) }
    }

    /// Hands the X9.63 bytes of the key to `handler`.
    open func exportBytes(completion handler: @escaping @Sendable (Data?, (any Error)?) -> Void) {
        Completion.run(handler) { try await self.bytes }
    }

    /// Encrypts `data` for this key; `handler` gets the ciphertext or the error.
    open func encrypt(
        _ data: Data, algorithm: SecKeyAlgorithm, completion handler: @escaping @Sendable (Data?, (any Error)?) -> Void
    ) {
        Completion.run(handler) { try await self.encrypt(data, algorithm: algorithm) }
    }

    /// `handler` gets nil when `signature` is this key's over `signedData`, else the error.
    open func verify(
        _ signedData: Data, signature: Data, algorithm: SecKeyAlgorithm,
        completion handler: @escaping @Sendable ((any Error)?) -> Void
    ) {
        Completion.run(handler) { try await self.verify(signedData, signature: signature, algorithm: algorithm) }
    }

    open func canEncrypt(using algorithm: SecKeyAlgorithm) -> Bool { algorithm.known?.supports(.encrypt) ?? false }

    open func encrypt(_ data: Data, algorithm: SecKeyAlgorithm) async throws -> Data {
        guard let known = algorithm.known, known.supports(.encrypt) else { throw KeyText.unsupported(algorithm) }
        do {
            return Data(try RightKeys.encrypt(Array(data), publicKey: raw, algorithm: known))
        } catch {
            throw LAError(.authenticationFailed, "\(error)")
        }
    }

    open func canVerify(using algorithm: SecKeyAlgorithm) -> Bool { algorithm.known?.supports(.verify) ?? false }

    /// Returns when `signature` is this key's over `signedData`; throws otherwise.
    open func verify(_ signedData: Data, signature: Data, algorithm: SecKeyAlgorithm) async throws {
        guard let known = algorithm.known, known.supports(.verify) else { throw KeyText.unsupported(algorithm) }
        let valid: Bool
        do {
            valid = try RightKeys.verify(
                Array(signedData), signature: Array(signature), publicKey: raw, algorithm: known)
        } catch {
            throw LAError(.authenticationFailed, "\(error)")
        }
        guard valid else { throw LAError(.authenticationFailed, KeyText.badSignature) }
    }
}

/// The private half of a right's key, kept by the daemon: Apple's `LAPrivateKey`. Each operation is
/// one request in which the daemon evaluates the right's requirement first.
open class LAPrivateKey: NSObject, @unchecked Sendable {
    let identifier: String
    let channel: RightChannel
    weak var owner: LAPersistedRight?
    /// The public half.
    public let publicKey: LAPublicKey

    init(identifier: String, publicKey: LAPublicKey, channel: RightChannel) {
        self.identifier = identifier
        self.publicKey = publicKey
        self.channel = channel
        super.init()
    }

    open func canSign(using algorithm: SecKeyAlgorithm) -> Bool { algorithm.known?.supports(.sign) ?? false }
    open func canDecrypt(using algorithm: SecKeyAlgorithm) -> Bool { algorithm.known?.supports(.decrypt) ?? false }
    open func canExchangeKeys(using algorithm: SecKeyAlgorithm) -> Bool {
        algorithm.known?.supports(.keyExchange) ?? false
    }

    open func sign(_ data: Data, algorithm: SecKeyAlgorithm) async throws -> Data {
        try await use(.sign, algorithm, data: Array(data))
    }

    open func decrypt(_ data: Data, algorithm: SecKeyAlgorithm) async throws -> Data {
        try await use(.decrypt, algorithm, data: Array(data))
    }

    /// `parameters`: `kSecKeyKeyExchangeParameterRequestedSize` (Int) and
    /// `kSecKeyKeyExchangeParameterSharedInfo` (Data) for the X9.63 variants.
    open func exchangeKeys(publicKey: Data, algorithm: SecKeyAlgorithm, parameters: [AnyHashable: Any]) async throws
        -> Data
    {
        let size = (parameters[AnyHashable(kSecKeyKeyExchangeParameterRequestedSize)] as? Int).map(Int64.init)
        let info = (parameters[AnyHashable(kSecKeyKeyExchangeParameterSharedInfo)] as? Data).map { Array($0) }
        return try await use(.exchangeKeys, algorithm, data: Array(publicKey), requestedSize: size, sharedInfo: info)
    }

    // Apple's completion-handler forms: each runs its async form and calls `handler` on a private queue.

    open func sign(
        _ data: Data, algorithm: SecKeyAlgorithm, completion handler: @escaping @Sendable (Data?, (any Error)?) -> Void
    ) {
        Completion.run(handler) { try await self.sign(data, algorithm: algorithm) }
    }

    open func decrypt(
        _ data: Data, algorithm: SecKeyAlgorithm, completion handler: @escaping @Sendable (Data?, (any Error)?) -> Void
    ) {
        Completion.run(handler) { try await self.decrypt(data, algorithm: algorithm) }
    }

    open func exchangeKeys(
        publicKey: Data, algorithm: SecKeyAlgorithm, parameters: [AnyHashable: Any],
        completion handler: @escaping @Sendable (Data?, (any Error)?) -> Void
    ) {
        // `[AnyHashable: Any]` is not Sendable: the two values the exchange reads are taken here.
        let size = parameters[AnyHashable(kSecKeyKeyExchangeParameterRequestedSize)] as? Int
        let info = parameters[AnyHashable(kSecKeyKeyExchangeParameterSharedInfo)] as? Data
        Completion.run(handler) {
            var kept: [AnyHashable: Any] = [:]
            if let size { kept[AnyHashable(kSecKeyKeyExchangeParameterRequestedSize)] = size }
            if let info { kept[AnyHashable(kSecKeyKeyExchangeParameterSharedInfo)] = info }
            return try await self.exchangeKeys(publicKey: publicKey, algorithm: algorithm, parameters: kept)
        }
    }

    private func use(
        _ operation: RightOperation, _ algorithm: SecKeyAlgorithm, data: [UInt8], requestedSize: Int64? = nil,
        sharedInfo: [UInt8]? = nil
    ) async throws -> Data {
        guard let owner else { throw LAError(.invalidContext, RightText.rightGone) }
        let options = RightUseOptions(
            identifier: identifier, operation: operation, algorithm: algorithm.rawValue, data: data,
            requestedSize: requestedSize, sharedInfo: sharedInfo)
        return Data(try await channel.use(options, right: owner, reason: RightText.useKeyReason))
    }
}

enum KeyText {
    static var badSignature: String { tr("The signature does not verify") }
    static func unsupported(_ algorithm: SecKeyAlgorithm) -> LAError {
        LAError(.invalidContext, tr("%s is not an algorithm of this key", .text(algorithm.rawValue)))
    }
}
