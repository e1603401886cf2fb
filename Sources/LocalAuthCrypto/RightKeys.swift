// SPDX-License-Identifier: Apache-2.0
import Crypto

/// The algorithms of Apple's `SecKeyAlgorithm` that an `LAPrivateKey` (P-256) offers. The raw value is
/// the Swift name (the wire carries it); `appleName` is Apple's CFString (`SecKeyAlgorithm.rawValue` on
/// Apple's systems). Every hash Apple names for P-256 keys except SHA-1: SHA-224 (this module's own,
/// swift-crypto has none), SHA-256, SHA-384, SHA-512.
public enum KeyAlgorithm: String, Sendable, CaseIterable {
    /// ECDSA over the hash of the message; the signature in X9.62 (DER).
    case ecdsaSignatureMessageX962SHA224, ecdsaSignatureMessageX962SHA256, ecdsaSignatureMessageX962SHA384
    case ecdsaSignatureMessageX962SHA512
    /// ECDSA over a digest the caller computed (its length the hash's); the signature in X9.62 (DER).
    case ecdsaSignatureDigestX962SHA224, ecdsaSignatureDigestX962SHA256, ecdsaSignatureDigestX962SHA384
    case ecdsaSignatureDigestX962SHA512
    /// ECDSA over the hash of the message; the signature as r ‖ s (RFC 4754).
    case ecdsaSignatureMessageRFC4754SHA224, ecdsaSignatureMessageRFC4754SHA256
    case ecdsaSignatureMessageRFC4754SHA384, ecdsaSignatureMessageRFC4754SHA512
    /// ECIES: an ephemeral P-256 key, ECDH, ANSI X9.63 KDF with the named hash over the ephemeral
    /// public key, AES-128-GCM (P-256 keys) with a 16-byte IV from the KDF. Output: ephemeral key ‖
    /// ciphertext ‖ tag.
    case eciesEncryptionStandardVariableIVX963SHA224AESGCM, eciesEncryptionStandardVariableIVX963SHA256AESGCM
    case eciesEncryptionStandardVariableIVX963SHA384AESGCM, eciesEncryptionStandardVariableIVX963SHA512AESGCM
    /// The same (P-256's cofactor is 1, so the cofactor variant computes the same secret).
    case eciesEncryptionCofactorVariableIVX963SHA224AESGCM, eciesEncryptionCofactorVariableIVX963SHA256AESGCM
    case eciesEncryptionCofactorVariableIVX963SHA384AESGCM, eciesEncryptionCofactorVariableIVX963SHA512AESGCM
    /// ECDH: the raw shared secret (the x coordinate).
    case ecdhKeyExchangeStandard, ecdhKeyExchangeCofactor
    /// ECDH, then ANSI X9.63 KDF with the named hash (parameters: requested size, shared info).
    case ecdhKeyExchangeStandardX963SHA224, ecdhKeyExchangeStandardX963SHA256, ecdhKeyExchangeStandardX963SHA384
    case ecdhKeyExchangeStandardX963SHA512
    case ecdhKeyExchangeCofactorX963SHA224, ecdhKeyExchangeCofactorX963SHA256, ecdhKeyExchangeCofactorX963SHA384
    case ecdhKeyExchangeCofactorX963SHA512

    public enum Use: Sendable { case sign, verify, encrypt, decrypt, keyExchange }

    /// The hash an algorithm names.
    public enum Hash: String, Sendable, CaseIterable {
        case sha224 = "SHA224", sha256 = "SHA256", sha384 = "SHA384", sha512 = "SHA512"
    }

    enum Family { case messageX962, digestX962, messageRFC4754, ecies, ecdh, ecdhX963 }

    var family: Family {
        let name = rawValue
        if name.hasPrefix("ecdsaSignatureMessageX962") { return .messageX962 }
        if name.hasPrefix("ecdsaSignatureDigestX962") { return .digestX962 }
        if name.hasPrefix("ecdsaSignatureMessageRFC4754") { return .messageRFC4754 }
        if name.hasPrefix("ecies") { return .ecies }
        return name.contains("X963") ? .ecdhX963 : .ecdh
    }

    /// The hash of the name; nil for the raw ECDH exchanges.
    public var hash: Hash? { Hash.allCases.first { rawValue.contains($0.rawValue) } }

    private var cofactor: Bool { rawValue.contains("Cofactor") }

    /// Apple's value of the `SecKeyAlgorithm` of this name (`kSecKeyAlgorithm…` in Security's SecKey.h).
    public var appleName: String {
        let hash = self.hash?.rawValue ?? ""
        let ecdh = cofactor ? "ECDHC" : "ECDH"
        return switch family {
        case .messageX962: "algid:sign:ECDSA:message-X962:" + hash
        case .digestX962: "algid:sign:ECDSA:digest-X962:" + hash
        case .messageRFC4754: "algid:sign:ECDSA:message-RFC4754:" + hash
        case .ecies: "algid:encrypt:ECIES:\(ecdh):KDFX963:\(hash):AESGCM-KDFIV"
        case .ecdh: "algid:keyexchange:" + ecdh
        case .ecdhX963: "algid:keyexchange:\(ecdh):KDFX963:" + hash
        }
    }

    /// The algorithm whose Apple value is `appleName`.
    public init?(appleName: String) {
        guard let found = Self.allCases.first(where: { $0.appleName == appleName }) else { return nil }
        self = found
    }

    public func supports(_ use: Use) -> Bool {
        switch family {
        case .messageX962, .digestX962, .messageRFC4754: use == .sign || use == .verify
        case .ecies: use == .encrypt || use == .decrypt
        case .ecdh, .ecdhX963: use == .keyExchange
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

    /// Signs `data`: the message, or for the `…DigestX962…` algorithms a digest of the named hash's length.
    public static func sign(_ data: [UInt8], privateKey raw: [UInt8], algorithm: KeyAlgorithm) throws(KeyError)
        -> [UInt8]
    {
        guard algorithm.supports(.sign) else { throw KeyError("\(algorithm.rawValue) does not sign") }
        let digest = try signedDigest(data, algorithm)
        guard let key = try? P256.Signing.PrivateKey(rawRepresentation: raw),
            let signature = try? key.signature(for: GivenDigest(bytes: digest))
        else { throw KeyError("the signature could not be made") }
        return algorithm.family == .messageRFC4754
            ? Array(signature.rawRepresentation) : Array(signature.derRepresentation)
    }

    public static func verify(
        _ data: [UInt8], signature: [UInt8], publicKey: [UInt8], algorithm: KeyAlgorithm
    ) throws(KeyError) -> Bool {
        guard algorithm.supports(.verify) else { throw KeyError("\(algorithm.rawValue) does not verify") }
        guard let key = try? P256.Signing.PublicKey(x963Representation: publicKey) else {
            throw KeyError("not a P-256 public key")
        }
        let digest = try signedDigest(data, algorithm)
        let parsed =
            algorithm.family == .messageRFC4754
            ? try? P256.Signing.ECDSASignature(rawRepresentation: signature)
            : try? P256.Signing.ECDSASignature(derRepresentation: signature)
        guard let parsed else { return false }
        return key.isValidSignature(parsed, for: GivenDigest(bytes: digest))
    }

    /// The digest a signature covers: the message's hash, or the caller's digest (checked for length).
    private static func signedDigest(_ data: [UInt8], _ algorithm: KeyAlgorithm) throws(KeyError) -> [UInt8] {
        guard let hash = algorithm.hash else { throw KeyError("\(algorithm.rawValue) names no hash") }
        if algorithm.family == .digestX962 {
            guard data.count == hash.byteCount else {
                throw KeyError("a \(hash.rawValue) digest is \(hash.byteCount) bytes, not \(data.count)")
            }
            return data
        }
        return hash.digest(data)
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
        let (key, iv) = eciesKeyAndIV(secret, ephemeralPublic: ephemeralPublic, hash: algorithm.hash ?? .sha256)
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
        let (symmetric, iv) = eciesKeyAndIV(secret, ephemeralPublic: ephemeralPublic, hash: algorithm.hash ?? .sha256)
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
        guard algorithm.family == .ecdhX963, let hash = algorithm.hash else {
            return secret.withUnsafeBytes { Array($0) }
        }
        guard (1...1024).contains(requestedSize) else { throw KeyError("requested size must be 1…1024 bytes") }
        return hash.x963(secret, sharedInfo: sharedInfo, size: requestedSize)
    }

    /// X9.63 KDF (the algorithm's hash) over the shared secret with the ephemeral public key as shared
    /// info: 16 bytes of AES key (AES-128, as Apple uses for keys of 256 bits or fewer), then 16 of IV.
    private static func eciesKeyAndIV(_ secret: SharedSecret, ephemeralPublic: [UInt8], hash: KeyAlgorithm.Hash)
        -> (SymmetricKey, [UInt8])
    {
        let derived = hash.x963(secret, sharedInfo: ephemeralPublic, size: 32)
        return (SymmetricKey(data: derived[..<16]), Array(derived[16...]))
    }
}

extension KeyAlgorithm.Hash {
    /// The digest's length in bytes.
    public var byteCount: Int {
        switch self {
        case .sha224: SHA224Digest.byteCount
        case .sha256: SHA256Digest.byteCount
        case .sha384: SHA384Digest.byteCount
        case .sha512: SHA512Digest.byteCount
        }
    }

    /// The hash of `data`.
    public func digest(_ data: [UInt8]) -> [UInt8] {
        switch self {
        case .sha224: Array(SHA224.hash(data: data))
        case .sha256: Array(SHA256.hash(data: data))
        case .sha384: Array(SHA384.hash(data: data))
        case .sha512: Array(SHA512.hash(data: data))
        }
    }

    /// ANSI X9.63 KDF with this hash (swift-crypto's).
    func x963(_ secret: SharedSecret, sharedInfo: [UInt8], size: Int) -> [UInt8] {
        let key =
            switch self {
            case .sha224:
                secret.x963DerivedSymmetricKey(using: SHA224.self, sharedInfo: sharedInfo, outputByteCount: size)
            case .sha256:
                secret.x963DerivedSymmetricKey(using: SHA256.self, sharedInfo: sharedInfo, outputByteCount: size)
            case .sha384:
                secret.x963DerivedSymmetricKey(using: SHA384.self, sharedInfo: sharedInfo, outputByteCount: size)
            case .sha512:
                secret.x963DerivedSymmetricKey(using: SHA512.self, sharedInfo: sharedInfo, outputByteCount: size)
            }
        return key.withUnsafeBytes { Array($0) }
    }
}

/// SHA-256, for names that must not reveal what they name.
public enum Digests {
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: bytes)) }
}
