// SPDX-License-Identifier: Apache-2.0
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
