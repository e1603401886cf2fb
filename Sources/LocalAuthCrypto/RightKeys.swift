// SPDX-License-Identifier: Apache-2.0
import Crypto

/// The algorithms of Apple's `SecKeyAlgorithm` that an `LAPrivateKey` (P-256) offers and swift-crypto
/// implements. The raw value is the Swift name (the wire carries it), not Apple's CFString.
public enum KeyAlgorithm: String, Sendable, CaseIterable {
    /// ECDSA over SHA-256 of the message; the signature in X9.62 (DER).
    case ecdsaSignatureMessageX962SHA256
    /// ECDSA over SHA-256 of the message; the signature as r ‖ s (RFC 4754).
    case ecdsaSignatureMessageRFC4754SHA256
    /// ECIES: an ephemeral P-256 key, ECDH, ANSI X9.63 KDF with SHA-256 over the ephemeral public
    /// key, AES-128-GCM with a 16-byte IV from the KDF. Output: ephemeral key ‖ ciphertext ‖ tag.
    case eciesEncryptionStandardVariableIVX963SHA256AESGCM
    /// The same (P-256's cofactor is 1, so the cofactor variant computes the same secret).
    case eciesEncryptionCofactorVariableIVX963SHA256AESGCM
    /// ECDH: the raw shared secret (the x coordinate).
    case ecdhKeyExchangeStandard
    case ecdhKeyExchangeCofactor
    /// ECDH, then ANSI X9.63 KDF with SHA-256 (parameters: requested size, shared info).
    case ecdhKeyExchangeStandardX963SHA256
    case ecdhKeyExchangeCofactorX963SHA256

    public enum Use: Sendable { case sign, verify, encrypt, decrypt, keyExchange }

    public func supports(_ use: Use) -> Bool {
        switch self {
        case .ecdsaSignatureMessageX962SHA256, .ecdsaSignatureMessageRFC4754SHA256: use == .sign || use == .verify
        case .eciesEncryptionStandardVariableIVX963SHA256AESGCM, .eciesEncryptionCofactorVariableIVX963SHA256AESGCM:
            use == .encrypt || use == .decrypt
        case .ecdhKeyExchangeStandard, .ecdhKeyExchangeCofactor, .ecdhKeyExchangeStandardX963SHA256,
            .ecdhKeyExchangeCofactorX963SHA256:
            use == .keyExchange
        }
    }
}

/// Why a key operation failed; the text reaches the client, never key bytes.
public struct KeyError: Error, Equatable, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// P-256 private keys as the daemon keeps them (32 raw bytes) and the operations on them. The daemon
/// runs the private half; the client library runs the public half (`encrypt`, `verify`).
public enum RightKeys {
    /// A fresh private key, raw (32 bytes).
    public static func generatePrivateKey() -> [UInt8] {
        Array(P256.KeyAgreement.PrivateKey().rawRepresentation)
    }

    /// The public key in X9.63 form (65 bytes, 0x04 ‖ x ‖ y), as Apple's `exportBytes` gives it.
    public static func publicKey(ofPrivate raw: [UInt8]) throws(KeyError) -> [UInt8] {
        guard let key = try? P256.KeyAgreement.PrivateKey(rawRepresentation: raw) else {
            throw KeyError("the stored private key is not a P-256 key")
        }
        return Array(key.publicKey.x963Representation)
    }

    public static func sign(_ message: [UInt8], privateKey raw: [UInt8], algorithm: KeyAlgorithm) throws(KeyError)
        -> [UInt8]
    {
        guard algorithm.supports(.sign) else { throw KeyError("\(algorithm.rawValue) does not sign") }
        guard let key = try? P256.Signing.PrivateKey(rawRepresentation: raw),
            let signature = try? key.signature(for: message)
        else { throw KeyError("the signature could not be made") }
        return algorithm == .ecdsaSignatureMessageX962SHA256
            ? Array(signature.derRepresentation) : Array(signature.rawRepresentation)
    }

    public static func verify(
        _ message: [UInt8], signature: [UInt8], publicKey: [UInt8], algorithm: KeyAlgorithm
    ) throws(KeyError) -> Bool {
        guard algorithm.supports(.verify) else { throw KeyError("\(algorithm.rawValue) does not verify") }
        guard let key = try? P256.Signing.PublicKey(x963Representation: publicKey) else {
            throw KeyError("not a P-256 public key")
        }
        let parsed =
            algorithm == .ecdsaSignatureMessageX962SHA256
            ? try? P256.Signing.ECDSASignature(derRepresentation: signature)
            : try? P256.Signing.ECDSASignature(rawRepresentation: signature)
        guard let parsed else { return false }
        return key.isValidSignature(parsed, for: message)
    }

    /// ECIES to `publicKey` (the client library's `LAPublicKey.encrypt`).
    public static func encrypt(_ plaintext: [UInt8], publicKey: [UInt8], algorithm: KeyAlgorithm) throws(KeyError)
        -> [UInt8]
    {
        guard algorithm.supports(.encrypt) else { throw KeyError("\(algorithm.rawValue) does not encrypt") }
        guard let recipient = try? P256.KeyAgreement.PublicKey(x963Representation: publicKey) else {
            throw KeyError("not a P-256 public key")
        }
        let ephemeral = P256.KeyAgreement.PrivateKey()
        let ephemeralPublic = Array(ephemeral.publicKey.x963Representation)
        guard let secret = try? ephemeral.sharedSecretFromKeyAgreement(with: recipient) else {
            throw KeyError("key agreement failed")
        }
        let (key, iv) = eciesKeyAndIV(secret, ephemeralPublic: ephemeralPublic)
        guard let nonce = try? AES.GCM.Nonce(data: iv),
            let box = try? AES.GCM.seal(plaintext, using: key, nonce: nonce)
        else { throw KeyError("encryption failed") }
        return ephemeralPublic + Array(box.ciphertext) + Array(box.tag)
    }

    /// The private half of `encrypt`; fails on anything not made for this key.
    public static func decrypt(_ ciphertext: [UInt8], privateKey raw: [UInt8], algorithm: KeyAlgorithm)
        throws(KeyError) -> [UInt8]
    {
        guard algorithm.supports(.decrypt) else { throw KeyError("\(algorithm.rawValue) does not decrypt") }
        let pointSize = 65
        let tagSize = 16
        guard ciphertext.count >= pointSize + tagSize else { throw KeyError("the ciphertext is too short") }
        let ephemeralPublic = Array(ciphertext[..<pointSize])
        guard let key = try? P256.KeyAgreement.PrivateKey(rawRepresentation: raw),
            let peer = try? P256.KeyAgreement.PublicKey(x963Representation: ephemeralPublic),
            let secret = try? key.sharedSecretFromKeyAgreement(with: peer)
        else { throw KeyError("the ciphertext was not made for this key") }
        let (symmetric, iv) = eciesKeyAndIV(secret, ephemeralPublic: ephemeralPublic)
        guard let nonce = try? AES.GCM.Nonce(data: iv),
            let box = try? AES.GCM.SealedBox(
                nonce: nonce, ciphertext: ciphertext[pointSize..<(ciphertext.count - tagSize)],
                tag: ciphertext[(ciphertext.count - tagSize)...]),
            let plain = try? AES.GCM.open(box, using: symmetric)
        else { throw KeyError("the ciphertext was not made for this key, or was changed") }
        return Array(plain)
    }

    /// ECDH with `peerPublicKey` (X9.63), raw or through the X9.63 KDF.
    public static func exchange(
        privateKey raw: [UInt8], peerPublicKey: [UInt8], algorithm: KeyAlgorithm, requestedSize: Int,
        sharedInfo: [UInt8]
    ) throws(KeyError) -> [UInt8] {
        guard algorithm.supports(.keyExchange) else { throw KeyError("\(algorithm.rawValue) does not exchange keys") }
        guard let key = try? P256.KeyAgreement.PrivateKey(rawRepresentation: raw),
            let peer = try? P256.KeyAgreement.PublicKey(x963Representation: peerPublicKey),
            let secret = try? key.sharedSecretFromKeyAgreement(with: peer)
        else { throw KeyError("the peer's public key is not a P-256 key") }
        switch algorithm {
        case .ecdhKeyExchangeStandardX963SHA256, .ecdhKeyExchangeCofactorX963SHA256:
            guard (1...1024).contains(requestedSize) else { throw KeyError("requested size must be 1…1024 bytes") }
            return secret.x963DerivedSymmetricKey(
                using: SHA256.self, sharedInfo: sharedInfo, outputByteCount: requestedSize
            )
            .withUnsafeBytes { Array($0) }
        default:
            return secret.withUnsafeBytes { Array($0) }
        }
    }

    /// X9.63 KDF (SHA-256) over the shared secret with the ephemeral public key as shared info:
    /// 16 bytes of AES key, then 16 bytes of IV.
    private static func eciesKeyAndIV(_ secret: SharedSecret, ephemeralPublic: [UInt8]) -> (SymmetricKey, [UInt8]) {
        let derived = secret.x963DerivedSymmetricKey(
            using: SHA256.self, sharedInfo: ephemeralPublic, outputByteCount: 32
        )
        .withUnsafeBytes { Array($0) }
        return (SymmetricKey(data: derived[..<16]), Array(derived[16...]))
    }
}

/// SHA-256, for names that must not reveal what they name.
public enum Digests {
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: bytes)) }
}
