// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthCrypto
import LocalAuthLocalization
import LocalAuthProtocol

/// Apple's `SecKeyAlgorithm` (a Security framework type), declared here for the algorithms an
/// `LAPrivateKey` (P-256) offers on Linux, so `algorithm: .ecdsaSignatureMessageX962SHA256` compiles
/// unchanged. The raw values are Apple's (`"algid:sign:ECDSA:message-X962:SHA256"`, …), stated once in
/// `KeyAlgorithm.appleName`, so a value Apple-platform code stored or sent names the same algorithm
/// here. SHA-1 variants, RSA, and `ecdsaSignatureDigestX962` without a hash are not offered.
public struct SecKeyAlgorithm: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Apple's value of `algorithm`, stated once: `KeyAlgorithm.appleName`.
    init(_ algorithm: KeyAlgorithm) { self.rawValue = algorithm.appleName }

    public static let ecdsaSignatureMessageX962SHA224 = Self(.ecdsaSignatureMessageX962SHA224)
    public static let ecdsaSignatureMessageX962SHA256 = Self(.ecdsaSignatureMessageX962SHA256)
    public static let ecdsaSignatureMessageX962SHA384 = Self(.ecdsaSignatureMessageX962SHA384)
    public static let ecdsaSignatureMessageX962SHA512 = Self(.ecdsaSignatureMessageX962SHA512)
    public static let ecdsaSignatureDigestX962SHA224 = Self(.ecdsaSignatureDigestX962SHA224)
    public static let ecdsaSignatureDigestX962SHA256 = Self(.ecdsaSignatureDigestX962SHA256)
    public static let ecdsaSignatureDigestX962SHA384 = Self(.ecdsaSignatureDigestX962SHA384)
    public static let ecdsaSignatureDigestX962SHA512 = Self(.ecdsaSignatureDigestX962SHA512)
    public static let ecdsaSignatureMessageRFC4754SHA224 = Self(.ecdsaSignatureMessageRFC4754SHA224)
    public static let ecdsaSignatureMessageRFC4754SHA256 = Self(.ecdsaSignatureMessageRFC4754SHA256)
    public static let ecdsaSignatureMessageRFC4754SHA384 = Self(.ecdsaSignatureMessageRFC4754SHA384)
    public static let ecdsaSignatureMessageRFC4754SHA512 = Self(.ecdsaSignatureMessageRFC4754SHA512)
    public static let eciesEncryptionStandardVariableIVX963SHA224AESGCM = Self(
        .eciesEncryptionStandardVariableIVX963SHA224AESGCM)
    public static let eciesEncryptionStandardVariableIVX963SHA256AESGCM = Self(
        .eciesEncryptionStandardVariableIVX963SHA256AESGCM)
    public static let eciesEncryptionStandardVariableIVX963SHA384AESGCM = Self(
        .eciesEncryptionStandardVariableIVX963SHA384AESGCM)
    public static let eciesEncryptionStandardVariableIVX963SHA512AESGCM = Self(
        .eciesEncryptionStandardVariableIVX963SHA512AESGCM)
    public static let eciesEncryptionCofactorVariableIVX963SHA224AESGCM = Self(
        .eciesEncryptionCofactorVariableIVX963SHA224AESGCM)
    public static let eciesEncryptionCofactorVariableIVX963SHA256AESGCM = Self(
        .eciesEncryptionCofactorVariableIVX963SHA256AESGCM)
    public static let eciesEncryptionCofactorVariableIVX963SHA384AESGCM = Self(
        .eciesEncryptionCofactorVariableIVX963SHA384AESGCM)
    public static let eciesEncryptionCofactorVariableIVX963SHA512AESGCM = Self(
        .eciesEncryptionCofactorVariableIVX963SHA512AESGCM)
    public static let ecdhKeyExchangeStandard = Self(.ecdhKeyExchangeStandard)
    public static let ecdhKeyExchangeCofactor = Self(.ecdhKeyExchangeCofactor)
    public static let ecdhKeyExchangeStandardX963SHA224 = Self(.ecdhKeyExchangeStandardX963SHA224)
    public static let ecdhKeyExchangeStandardX963SHA256 = Self(.ecdhKeyExchangeStandardX963SHA256)
    public static let ecdhKeyExchangeStandardX963SHA384 = Self(.ecdhKeyExchangeStandardX963SHA384)
    public static let ecdhKeyExchangeStandardX963SHA512 = Self(.ecdhKeyExchangeStandardX963SHA512)
    public static let ecdhKeyExchangeCofactorX963SHA224 = Self(.ecdhKeyExchangeCofactorX963SHA224)
    public static let ecdhKeyExchangeCofactorX963SHA256 = Self(.ecdhKeyExchangeCofactorX963SHA256)
    public static let ecdhKeyExchangeCofactorX963SHA384 = Self(.ecdhKeyExchangeCofactorX963SHA384)
    public static let ecdhKeyExchangeCofactorX963SHA512 = Self(.ecdhKeyExchangeCofactorX963SHA512)

    var known: KeyAlgorithm? { KeyAlgorithm(appleName: rawValue) }
}

/// Security's `OSStatus`, the code of an error of `NSOSStatusErrorDomain`.
public typealias OSStatus = Int32
/// Security's codes for what `LAPublicKey.verify` and `encrypt` report, as `SecKeyVerifySignature` and
/// `SecKeyCreateEncryptedData` do: an error of `NSOSStatusErrorDomain` with this code.
/// A signature that is not the key's over the data (or not a signature at all).
public let errSecVerifyFailed: OSStatus = -67808
/// An algorithm the key does not offer, or input it cannot take (a digest of the wrong length).
public let errSecParam: OSStatus = -50

/// Security's `SecKeyKeyExchangeParameter` (a `CF_STRING_ENUM`), the keys of
/// `exchangeKeys(publicKey:algorithm:parameters:)`: `[SecKeyKeyExchangeParameter.requestedSize.rawValue: 32]`,
/// as Swift code on Apple's platforms spells them. The raw values are Apple's.
public struct SecKeyKeyExchangeParameter: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// The number of bytes an X9.63 exchange derives (an `Int`).
    public static let requestedSize = SecKeyKeyExchangeParameter(rawValue: "requestedSize")
    /// The X9.63 KDF's shared info (`Data`).
    public static let sharedInfo = SecKeyKeyExchangeParameter(rawValue: "sharedInfo")
}

/// The C names of the same keys (Swift on Apple's platforms spells them `SecKeyKeyExchangeParameter.…`).
public let kSecKeyKeyExchangeParameterRequestedSize = SecKeyKeyExchangeParameter.requestedSize.rawValue
public let kSecKeyKeyExchangeParameterSharedInfo = SecKeyKeyExchangeParameter.sharedInfo.rawValue

extension Dictionary where Key == AnyHashable, Value == Any {
    /// The value of an exchange parameter, keyed by its raw value (as Apple's code does) or by the
    /// parameter itself.
    func exchangeParameter(_ parameter: SecKeyKeyExchangeParameter) -> Any? {
        self[AnyHashable(parameter.rawValue)] ?? self[AnyHashable(parameter)]
    }
}

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
            throw KeyText.error(errSecParam, KeyText.unusable)
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
            // A digest of the wrong length for a `…DigestX962…` algorithm.
            throw KeyText.error(errSecParam, KeyText.unusable)
        }
        guard valid else { throw KeyText.error(errSecVerifyFailed, KeyText.badSignature) }
    }
}

/// The private half of a right's key, kept by the daemon: Apple's `LAPrivateKey`. Its operations work
/// while the right is authorized, without asking again: the daemon holds the authorization for this
/// process from the right's `authorize` until `deauthorize`.
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

    /// `parameters`: `SecKeyKeyExchangeParameter.requestedSize.rawValue` (Int) and `.sharedInfo.rawValue`
    /// (Data) for the X9.63 variants.
    open func exchangeKeys(publicKey: Data, algorithm: SecKeyAlgorithm, parameters: [AnyHashable: Any]) async throws
        -> Data
    {
        let size = (parameters.exchangeParameter(.requestedSize) as? Int).map(Int64.init)
        let info = (parameters.exchangeParameter(.sharedInfo) as? Data).map { Array($0) }
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
        let size = parameters.exchangeParameter(.requestedSize) as? Int
        let info = parameters.exchangeParameter(.sharedInfo) as? Data
        Completion.run(handler) {
            var kept: [AnyHashable: Any] = [:]
            if let size { kept[AnyHashable(SecKeyKeyExchangeParameter.requestedSize.rawValue)] = size }
            if let info { kept[AnyHashable(SecKeyKeyExchangeParameter.sharedInfo.rawValue)] = info }
            return try await self.exchangeKeys(publicKey: publicKey, algorithm: algorithm, parameters: kept)
        }
    }

    private func use(
        _ operation: RightOperation, _ algorithm: SecKeyAlgorithm, data: [UInt8], requestedSize: Int64? = nil,
        sharedInfo: [UInt8]? = nil
    ) async throws -> Data {
        guard let owner else { throw LAError(.invalidContext, RightText.rightGone) }
        // As Apple's: the private key works only while its right is authorized, and never asks.
        guard owner.state == .authorized else { throw LAError(.notInteractive, RightText.keyNotAuthorized) }
        // The daemon runs it under this process's authorization (`RightGrants`); should it hold none
        // (restarted since), the evaluation it would need fails instead of asking.
        let options = RightUseOptions(
            identifier: identifier, operation: operation, algorithm: algorithm.known?.rawValue ?? algorithm.rawValue,
            data: data, requestedSize: requestedSize, sharedInfo: sharedInfo,
            prompt: PromptOptions(flags: [.interactionNotAllowed]))
        return Data(try await channel.use(options, right: owner, reason: RightText.useKeyReason))
    }
}

/// The errors of the public-key operations: Security's, as Apple's `LAPublicKey` (over `SecKey`) reports
/// them — `NSOSStatusErrorDomain` with an `OSStatus` code a program can test — and a line in the
/// person's language as `localizedDescription`.
enum KeyText {
    static var badSignature: String { tr("The signature does not verify") }
    // TRANSLATORS: an LAPublicKey operation given data it cannot take (a digest of the wrong length).
    static var unusable: String { tr("The public key cannot be used with this data") }
    static func unsupported(_ algorithm: SecKeyAlgorithm) -> NSError {
        error(errSecParam, tr("%s is not an algorithm of this key", .text(algorithm.rawValue)))
    }
    static func error(_ code: OSStatus, _ message: String) -> NSError {
        NSError(domain: NSOSStatusErrorDomain, code: Int(code), userInfo: [NSLocalizedDescriptionKey: message])
    }
}
