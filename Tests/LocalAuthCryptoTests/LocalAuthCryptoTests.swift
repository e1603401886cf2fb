// SPDX-License-Identifier: Apache-2.0
import Crypto
import LocalAuthCrypto
import Testing

@Suite struct SealerTests {
    static let key = Sealer.generateKey()

    @Test func seal_thenOpenForTheSamePlace_givesThePlaintext() throws {
        let sealer = try #require(Sealer(key: Self.key))
        let sealed = sealer.seal(Array("a print".utf8), context: "users/alice/x.print")
        #expect(Sealer.isSealed(sealed))
        #expect(sealer.open(sealed, context: "users/alice/x.print") == Array("a print".utf8))
    }

    @Test func open_whenCopiedToAnotherUser_fails() throws {
        let sealer = try #require(Sealer(key: Self.key))
        let sealed = sealer.seal(Array("a print".utf8), context: "users/alice/x.print")
        #expect(sealer.open(sealed, context: "users/mallory/x.print") == nil)
    }

    @Test func open_withAnotherMachinesKey_fails() throws {
        let sealed = try #require(Sealer(key: Self.key)).seal([1, 2, 3], context: "c")
        let other = try #require(Sealer(key: Sealer.generateKey()))
        #expect(other.open(sealed, context: "c") == nil)
        #expect(other.checkValue != (try #require(Sealer(key: Self.key))).checkValue)
    }

    @Test func open_whenOneByteChanged_fails() throws {
        let sealer = try #require(Sealer(key: Self.key))
        var sealed = sealer.seal([1, 2, 3, 4], context: "c")
        sealed[sealed.count - 3] ^= 1
        #expect(sealer.open(sealed, context: "c") == nil)
    }

    @Test func seal_twice_neverRepeatsTheCiphertext() throws {
        let sealer = try #require(Sealer(key: Self.key))
        #expect(sealer.seal([9], context: "c") != sealer.seal([9], context: "c"))
    }

    @Test func init_withAShortKey_isRefused() {
        #expect(Sealer(key: [1, 2, 3]) == nil)
    }
}

@Suite struct RightKeysTests {
    let privateKey = RightKeys.generatePrivateKey()
    var publicKey: [UInt8] { try! RightKeys.publicKey(ofPrivate: privateKey) }

    @Test(arguments: [KeyAlgorithm.ecdsaSignatureMessageX962SHA256, .ecdsaSignatureMessageRFC4754SHA256])
    func sign_thenVerify_acceptsOnlyTheSignedMessage(_ algorithm: KeyAlgorithm) throws {
        let signature = try RightKeys.sign(Array("pay 10".utf8), privateKey: privateKey, algorithm: algorithm)
        #expect(
            try RightKeys.verify(Array("pay 10".utf8), signature: signature, publicKey: publicKey, algorithm: algorithm)
        )
        #expect(
            !(try RightKeys.verify(
                Array("pay 99".utf8), signature: signature, publicKey: publicKey, algorithm: algorithm)))
    }

    @Test func publicKey_isX963Uncompressed() {
        #expect(publicKey.count == 65 && publicKey[0] == 4)
    }

    @Test func encrypt_thenDecrypt_roundTrips_andATamperedCiphertextFails() throws {
        let algorithm = KeyAlgorithm.eciesEncryptionStandardVariableIVX963SHA256AESGCM
        var ciphertext = try RightKeys.encrypt(Array("vault key".utf8), publicKey: publicKey, algorithm: algorithm)
        #expect(ciphertext.count == 65 + 9 + 16)
        #expect(
            try RightKeys.decrypt(ciphertext, privateKey: privateKey, algorithm: algorithm) == Array("vault key".utf8))
        ciphertext[70] ^= 1
        #expect(throws: KeyError.self) {
            try RightKeys.decrypt(ciphertext, privateKey: privateKey, algorithm: algorithm)
        }
        let other = RightKeys.generatePrivateKey()
        let forOther = try RightKeys.encrypt(
            [1], publicKey: try RightKeys.publicKey(ofPrivate: other), algorithm: algorithm)
        #expect(throws: KeyError.self) { try RightKeys.decrypt(forOther, privateKey: privateKey, algorithm: algorithm) }
    }

    @Test func exchange_givesBothSidesTheSameSecret() throws {
        let peer = RightKeys.generatePrivateKey()
        let peerPublic = try RightKeys.publicKey(ofPrivate: peer)
        for algorithm in [KeyAlgorithm.ecdhKeyExchangeStandard, .ecdhKeyExchangeStandardX963SHA256] {
            let ours = try RightKeys.exchange(
                privateKey: privateKey, peerPublicKey: peerPublic, algorithm: algorithm, requestedSize: 48,
                sharedInfo: [7])
            let theirs = try RightKeys.exchange(
                privateKey: peer, peerPublicKey: publicKey, algorithm: algorithm, requestedSize: 48, sharedInfo: [7])
            #expect(ours == theirs)
            #expect(ours.count == (algorithm == .ecdhKeyExchangeStandard ? 32 : 48))
        }
    }

    @Test func algorithm_usedForTheWrongOperation_isRefused() {
        #expect(throws: KeyError.self) {
            try RightKeys.sign([1], privateKey: privateKey, algorithm: .ecdhKeyExchangeStandard)
        }
        #expect(!KeyAlgorithm.ecdsaSignatureMessageX962SHA256.supports(.decrypt))
    }
}

/// SHA-224, which swift-crypto does not have, against FIPS 180-4's examples.
@Suite struct SHA224Tests {
    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    @Test func hash_ofFIPSExamples_isFIPSAnswer() {
        #expect(
            Self.hex(SHA224.hash(data: Array("abc".utf8))) == "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7"
        )
        #expect(
            Self.hex(SHA224.hash(data: Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)))
                == "75388b16512776cc5dba5da1fd890150b0c6455cb4f58b1952522525")
        #expect(Self.hex(SHA224.hash(data: [UInt8]())) == "d14a028c2a3a2bc9476102bb288234c415a2b01f828ea62ac5b3e42f")
    }

    @Test func hash_inPieces_isTheHashOfTheWhole() {
        let message = [UInt8](repeating: 0x61, count: 1_000)
        var hasher = SHA224()
        for start in stride(from: 0, to: message.count, by: 37) {
            hasher.update(data: message[start..<min(start + 37, message.count)])
        }
        #expect(Array(hasher.finalize()) == Array(SHA224.hash(data: message)))
        #expect(SHA224Digest.byteCount == 28 && Array(hasher.finalize()).count == 28)
    }
}

/// Every P-256 `SecKeyAlgorithm` of Apple's the keys offer, checked against swift-crypto's own ECDSA,
/// ECDH, X9.63 KDF and AES-GCM (the other side of each operation done by swift-crypto directly).
@Suite struct AppleAlgorithmTests {
    let privateKey = RightKeys.generatePrivateKey()
    var publicKey: [UInt8] { try! RightKeys.publicKey(ofPrivate: privateKey) }
    var cryptoPublic: P256.Signing.PublicKey { try! P256.Signing.PublicKey(x963Representation: publicKey) }
    let message = Array("transfer 10 to bob".utf8)

    static func digest(_ hash: KeyAlgorithm.Hash, _ data: [UInt8]) -> any Digest {
        switch hash {
        case .sha224: SHA224.hash(data: data)
        case .sha256: SHA256.hash(data: data)
        case .sha384: SHA384.hash(data: data)
        case .sha512: SHA512.hash(data: data)
        }
    }

    static func isValid(_ key: P256.Signing.PublicKey, _ signature: P256.Signing.ECDSASignature, _ digest: any Digest)
        -> Bool
    {
        func open<D: Digest>(_ d: D) -> Bool { key.isValidSignature(signature, for: d) }
        return open(digest)
    }

    static let signing = KeyAlgorithm.allCases.filter { $0.supports(.sign) }

    @Test(arguments: signing)
    func sign_isVerifiedBySwiftCrypto_overTheNamedHash(_ algorithm: KeyAlgorithm) throws {
        let hash = try #require(algorithm.hash)
        let digest = Self.digest(hash, message)
        let input = algorithm.rawValue.contains("Digest") ? hash.digest(message) : message
        let signature = try RightKeys.sign(input, privateKey: privateKey, algorithm: algorithm)
        let parsed =
            algorithm.rawValue.contains("RFC4754")
            ? try P256.Signing.ECDSASignature(rawRepresentation: signature)
            : try P256.Signing.ECDSASignature(derRepresentation: signature)
        #expect(Self.isValid(cryptoPublic, parsed, digest))
        // Not over another hash of the same message.
        let other = KeyAlgorithm.Hash.allCases.first { $0 != hash }!
        #expect(!Self.isValid(cryptoPublic, parsed, Self.digest(other, message)))
        #expect(try RightKeys.verify(input, signature: signature, publicKey: publicKey, algorithm: algorithm))
    }

    @Test(arguments: signing)
    func verify_acceptsSwiftCryptosSignature_andRefusesAnotherMessage(_ algorithm: KeyAlgorithm) throws {
        let hash = try #require(algorithm.hash)
        let key = try P256.Signing.PrivateKey(rawRepresentation: privateKey)
        func sign<D: Digest>(_ d: D) throws -> P256.Signing.ECDSASignature { try key.signature(for: d) }
        func signAny(_ d: any Digest) throws -> P256.Signing.ECDSASignature { try sign(d) }
        let theirs = try signAny(Self.digest(hash, message))
        let bytes =
            algorithm.rawValue.contains("RFC4754") ? Array(theirs.rawRepresentation) : Array(theirs.derRepresentation)
        let input = algorithm.rawValue.contains("Digest") ? hash.digest(message) : message
        #expect(try RightKeys.verify(input, signature: bytes, publicKey: publicKey, algorithm: algorithm))
        let otherInput = algorithm.rawValue.contains("Digest") ? hash.digest([1]) : [1]
        #expect(!(try RightKeys.verify(otherInput, signature: bytes, publicKey: publicKey, algorithm: algorithm)))
    }

    @Test func digestAlgorithms_refuseADigestOfAnotherLength() {
        #expect(throws: KeyError.self) {
            try RightKeys.sign(
                SHA256.hash(data: message).map { $0 }, privateKey: privateKey,
                algorithm: .ecdsaSignatureDigestX962SHA384)
        }
    }

    @Test(arguments: KeyAlgorithm.allCases.filter { $0.supports(.keyExchange) })
    func exchange_isSwiftCryptosECDH_andX963KDFOfTheNamedHash(_ algorithm: KeyAlgorithm) throws {
        let peer = P256.KeyAgreement.PrivateKey()
        let ours = try RightKeys.exchange(
            privateKey: privateKey, peerPublicKey: Array(peer.publicKey.x963Representation), algorithm: algorithm,
            requestedSize: 40, sharedInfo: [1, 2, 3])
        let secret = try peer.sharedSecretFromKeyAgreement(
            with: try P256.KeyAgreement.PublicKey(x963Representation: publicKey))
        let expected =
            algorithm.hash.map { x963(secret, $0, sharedInfo: [1, 2, 3], size: 40) }
            ?? secret.withUnsafeBytes { Array($0) }
        #expect(ours == expected)
    }

    @Test(arguments: KeyAlgorithm.allCases.filter { $0.supports(.encrypt) })
    func encrypt_opensWithSwiftCrypto_underTheNamedHashesKey(_ algorithm: KeyAlgorithm) throws {
        let hash = try #require(algorithm.hash)
        let ciphertext = try RightKeys.encrypt(Array("vault key".utf8), publicKey: publicKey, algorithm: algorithm)
        // The recipient's side, by hand: ECDH with the ephemeral key, X9.63 KDF (the named hash, the
        // ephemeral key as shared info) → 16 bytes of AES-128 key and 16 of IV, AES-GCM.
        let ephemeral = Array(ciphertext[..<65])
        let secret = try P256.KeyAgreement.PrivateKey(rawRepresentation: privateKey).sharedSecretFromKeyAgreement(
            with: try P256.KeyAgreement.PublicKey(x963Representation: ephemeral))
        let derived = x963(secret, hash, sharedInfo: ephemeral, size: 32)
        let box = try AES.GCM.SealedBox(
            nonce: try AES.GCM.Nonce(data: derived[16...]), ciphertext: ciphertext[65..<(ciphertext.count - 16)],
            tag: ciphertext[(ciphertext.count - 16)...])
        #expect(Array(try AES.GCM.open(box, using: SymmetricKey(data: derived[..<16]))) == Array("vault key".utf8))
        #expect(
            try RightKeys.decrypt(ciphertext, privateKey: privateKey, algorithm: algorithm) == Array("vault key".utf8))
        // Another hash's variant does not open it.
        let other = KeyAlgorithm.allCases.first { $0.supports(.decrypt) && $0.hash != hash }!
        #expect(throws: KeyError.self) { try RightKeys.decrypt(ciphertext, privateKey: privateKey, algorithm: other) }
    }

    @Test func appleNames_areSecurityFrameworkValues_andNameOneAlgorithmEach() {
        #expect(KeyAlgorithm.ecdsaSignatureMessageX962SHA256.appleName == "algid:sign:ECDSA:message-X962:SHA256")
        #expect(KeyAlgorithm.ecdsaSignatureDigestX962SHA384.appleName == "algid:sign:ECDSA:digest-X962:SHA384")
        #expect(KeyAlgorithm.ecdsaSignatureMessageRFC4754SHA512.appleName == "algid:sign:ECDSA:message-RFC4754:SHA512")
        #expect(
            KeyAlgorithm.eciesEncryptionStandardVariableIVX963SHA224AESGCM.appleName
                == "algid:encrypt:ECIES:ECDH:KDFX963:SHA224:AESGCM-KDFIV")
        #expect(
            KeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA512AESGCM.appleName
                == "algid:encrypt:ECIES:ECDHC:KDFX963:SHA512:AESGCM-KDFIV")
        #expect(KeyAlgorithm.ecdhKeyExchangeStandard.appleName == "algid:keyexchange:ECDH")
        #expect(KeyAlgorithm.ecdhKeyExchangeCofactor.appleName == "algid:keyexchange:ECDHC")
        #expect(KeyAlgorithm.ecdhKeyExchangeCofactorX963SHA384.appleName == "algid:keyexchange:ECDHC:KDFX963:SHA384")
        #expect(Set(KeyAlgorithm.allCases.map(\.appleName)).count == KeyAlgorithm.allCases.count)
        for algorithm in KeyAlgorithm.allCases { #expect(KeyAlgorithm(appleName: algorithm.appleName) == algorithm) }
        #expect(KeyAlgorithm.allCases.count == 30)  // 12 signing, 8 ECIES, 10 ECDH
    }
}

/// swift-crypto's X9.63 KDF under the hash a key algorithm names: what `RightKeys` must agree with.
private func x963(_ secret: SharedSecret, _ hash: KeyAlgorithm.Hash, sharedInfo: [UInt8], size: Int) -> [UInt8] {
    func derive<H: HashFunction>(_ function: H.Type) -> [UInt8] {
        secret.x963DerivedSymmetricKey(using: function, sharedInfo: sharedInfo, outputByteCount: size)
            .withUnsafeBytes { Array($0) }
    }
    return switch hash {
    case .sha224: derive(SHA224.self)
    case .sha256: derive(SHA256.self)
    case .sha384: derive(SHA384.self)
    case .sha512: derive(SHA512.self)
    }
}
