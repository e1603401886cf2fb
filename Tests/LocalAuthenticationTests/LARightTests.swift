// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthCrypto
import LocalAuthProtocol
import Testing

@testable import LocalAuthentication

/// Apple's rights API against the real daemon (as root: root's own rights are root's).
@Suite(.serialized, .timeLimit(.minutes(2)))
struct LARightTests {
    static func saved(_ d: Daemon, _ requirement: LAAuthenticationRequirement = .biometry) async throws
        -> LAPersistedRight
    {
        try await d.enroll(printID: "root-1")
        let store = LARightStore(socketPath: d.socketPath)
        let right = try await store.saveRight(
            LARight(requirement: requirement), identifier: "com.example.vault", secret: Data("vault key".utf8))
        right.linuxPrompt = nil
        return right
    }

    @Test func authorize_withTheOwnersFinger_releasesTheSecret_untilDeauthorize() async throws {
        let d = try Daemon()
        let right = try await Self.saved(d)
        #expect(right.state == .unknown)
        try d.touch("root-1")
        try await right.authorize(localizedReason: "Open the vault")
        #expect(right.state == .authorized)
        #expect(try await right.secret.rawData == Data("vault key".utf8))
        await right.deauthorize()
        #expect(right.state == .unknown)
    }

    /// Apple's secret is available only after `authorize`: reading it asks no one. A finger waiting at
    /// the reader would release it if reading asked the daemon.
    @Test func secret_beforeAuthorizeOrAfterDeauthorize_isNotReleased_andReadingAsksNoOne() async throws {
        let d = try Daemon()
        let right = try await Self.saved(d)
        try d.touch("root-1")
        await Self.expectNotInteractive { _ = try await right.secret.rawData }
        await Self.expectNotInteractive {
            _ = try await Self.handed { done in right.secret.loadData { done($0, $1) } }
        }
        try await right.authorize(localizedReason: "Open the vault")  // the waiting finger
        #expect(try await right.secret.rawData == Data("vault key".utf8))
        await right.deauthorize()
        await Self.expectNotInteractive { _ = try await right.secret.rawData }
        for _ in 0..<3 { try d.touch("mallory-1") }
        await #expect(throws: LAError.self) { try await right.authorize(localizedReason: "Open the vault") }
        await Self.expectNotInteractive { _ = try await right.secret.rawData }
    }

    static func expectNotInteractive(
        sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void
    ) async {
        do {
            try await body()
            Issue.record("the secret was released", sourceLocation: sourceLocation)
        } catch let error as LAError {
            #expect(error.code == .notInteractive, sourceLocation: sourceLocation)
        } catch {
            Issue.record("not an LAError: \(error)", sourceLocation: sourceLocation)
        }
    }

    /// docs/apple-api.md's notes on `LARight` that Linux can show: `state` starts unknown and is
    /// `authorizing` while the person is asked; `tag` is the app's (0, never touched); `checkCanAuthorize`
    /// answers without asking (no finger taken), nil when it could, the `LAError` when it could not.
    @Test func right_stateTagAndCheckCanAuthorize_behaveAsAppleDocuments() async throws {
        let d = try Daemon()
        let right = LARight(requirement: .biometry)
        right.socketPath = d.socketPath
        right.linuxPrompt = nil
        #expect(right.state == .unknown && right.tag == 0)
        right.tag = 42
        do {
            try await right.checkCanAuthorize()
            Issue.record("no finger enrolled, yet it could authorize")
        } catch let error as LAError {
            #expect(error.code == .biometryNotEnrolled)
        }
        try await d.enroll(printID: "root-1")
        try d.touch("root-1")
        try await right.checkCanAuthorize()
        try await Self.finished { done in right.checkCanAuthorize { done($0) } }
        #expect(right.state == .unknown)
        // The finger is still there for authorize: checkCanAuthorize asked no one.
        let started = Date()
        try await right.authorize(localizedReason: "Confirm")
        #expect(right.state == .authorized && right.tag == 42)
        #expect(Date().timeIntervalSince(started) < 10)

        let asking = Task { try await right.authorize(localizedReason: "Confirm again") }
        let deadline = Date().addingTimeInterval(10)
        while right.state != .authorizing && Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(right.state == .authorizing)
        try d.touch("root-1")
        try await asking.value
        #expect(right.state == .authorized)
    }

    /// The public key needs no authorization (Apple: "public-key operations always work"); a right saved
    /// without a secret has none to read once authorized; `removeAllRights` removes every right of the
    /// caller (here the account), key and secret.
    @Test func publicKeyWithoutAuthorization_noSecret_andRemoveAllRights() async throws {
        let d = try Daemon()
        let withSecret = try await Self.saved(d)  // "com.example.vault"
        let store = LARightStore(socketPath: d.socketPath)
        let bare = try await store.saveRight(LARight(requirement: .biometry), identifier: "com.example.bare")
        bare.linuxPrompt = nil
        let bytes = try await bare.key.publicKey.bytes
        #expect(bytes.count == 65 && bytes.first == 0x04)
        let algorithm = SecKeyAlgorithm.eciesEncryptionStandardVariableIVX963SHA256AESGCM
        _ = try await bare.key.publicKey.encrypt(Data("x".utf8), algorithm: algorithm)
        #expect(bare.state == .unknown)
        try d.touch("root-1")
        try await bare.authorize(localizedReason: "Open")
        do {
            _ = try await bare.secret.rawData
            Issue.record("a secret of a right saved without one")
        } catch let error as LAError {
            #expect(error.code == .invalidContext)
        }
        try await store.removeAllRights()
        for identifier in ["com.example.vault", "com.example.bare"] {
            await #expect(throws: LAError.self) { _ = try await store.right(forIdentifier: identifier) }
        }
        _ = withSecret
    }

    @Test func authorize_withAnotherFinger_failsAndReleasesNothing() async throws {
        let d = try Daemon()
        let right = try await Self.saved(d)
        for _ in 0..<3 { try d.touch("mallory-1") }
        await #expect(throws: LAError.self) { try await right.authorize(localizedReason: "Open the vault") }
        #expect(right.state == .notAuthorized)
    }

    /// Apple's authorize-then-use: one finger for `authorize`, then the private key signs, decrypts and
    /// exchanges without asking again, until `deauthorize`. Before `authorize` and after `deauthorize`
    /// the key refuses without asking (a finger waiting at the reader stays there). The private key and
    /// the secret never reach the daemon's log.
    @Test func privateKey_afterOneAuthorize_signsDecryptsAndExchangesWithoutAsking_untilDeauthorize() async throws {
        let d = try Daemon()
        let right = try await Self.saved(d)
        let message = Data("transfer 10".utf8)
        try d.touch("root-1")
        await Self.expectNotInteractive {
            _ = try await right.key.sign(message, algorithm: .ecdsaSignatureMessageX962SHA256)
        }
        try await right.authorize(localizedReason: "Sign the transfer")  // takes the waiting finger
        let signature = try await right.key.sign(message, algorithm: .ecdsaSignatureMessageX962SHA256)
        try await right.key.publicKey.verify(message, signature: signature, algorithm: .ecdsaSignatureMessageX962SHA256)
        await Self.expectSecurityError(errSecVerifyFailed) {
            try await right.key.publicKey.verify(
                Data("transfer 99".utf8), signature: signature, algorithm: .ecdsaSignatureMessageX962SHA256)
        }
        let algorithm = SecKeyAlgorithm.eciesEncryptionStandardVariableIVX963SHA256AESGCM
        #expect(right.key.canDecrypt(using: algorithm) && right.key.publicKey.canEncrypt(using: algorithm))
        let ciphertext = try await right.key.publicKey.encrypt(Data("wrapped".utf8), algorithm: algorithm)
        #expect(try await right.key.decrypt(ciphertext, algorithm: algorithm) == Data("wrapped".utf8))
        let peer = try await LARightStore(socketPath: d.socketPath).saveRight(LARight(), identifier: "com.example.peer")
        let shared = try await right.key.exchangeKeys(
            publicKey: try await peer.key.publicKey.bytes, algorithm: .ecdhKeyExchangeStandard, parameters: [:])
        #expect(shared.count == 32)
        let derived = try await right.key.exchangeKeys(
            publicKey: try await peer.key.publicKey.bytes, algorithm: .ecdhKeyExchangeStandardX963SHA384,
            parameters: [
                SecKeyKeyExchangeParameter.requestedSize.rawValue: 48,
                SecKeyKeyExchangeParameter.sharedInfo.rawValue: Data("info".utf8),
            ])
        #expect(derived.count == 48)

        await right.deauthorize()
        try d.touch("root-1")
        await Self.expectNotInteractive {
            _ = try await right.key.sign(message, algorithm: .ecdsaSignatureMessageX962SHA256)
        }
        // The daemon dropped the authorization too: a use that skipped the library's check is
        // evaluated, and (interaction not allowed) refused without taking the waiting finger.
        right.setState(.authorized)
        await Self.expectNotInteractive {
            _ = try await right.key.sign(message, algorithm: .ecdsaSignatureMessageX962SHA256)
        }
        try await right.authorize(localizedReason: "Sign again")  // the finger was still there
        #expect(!d.log.contains("vault key"))
    }

    /// The authorization belongs to the process that obtained it: `localauthctl right sign`, another
    /// process of the same account, is asked for a finger (and, with none, times out) while this one
    /// signs without.
    @Test func authorization_isThisProcesses_anotherProcessIsAskedAgain() async throws {
        let d = try Daemon()
        let right = try await Self.saved(d)
        try d.touch("root-1")
        try await right.authorize(localizedReason: "Sign")
        let (status, text) = try Daemon.run(
            Daemon.binDirectory + "/localauthctl",
            ["right", "sign", "com.example.vault", "--timeout", "2", "--socket", d.socketPath], stdin: "transfer")
        #expect(status != 0, "another process signed under this one's authorization: \(text)")
        // It was asked for a finger, and timed out: evaluated, not run under this process's grant.
        #expect(
            d.log.contains(#"operation="3" service="localauthctl right" result=systemCancel"#),
            "the other process's sign was not evaluated: \(text)")
        _ = try await right.key.sign(Data("transfer".utf8), algorithm: .ecdsaSignatureMessageX962SHA256)
    }

    /// Apple's completion-handler forms, called as Apple-platform code calls them, against the daemon.
    @Test func completionForms_saveFetchAuthorizeLoadSignAndRemove_asTheAsyncFormsDo() async throws {
        let d = try await Daemon.withRootFinger()
        let store = LARightStore(socketPath: d.socketPath)
        let saved = try await Self.handed { done in
            store.saveRight(LARight(requirement: .biometry), identifier: "com.example.cb", secret: Data("cb".utf8)) {
                done($0, $1)
            }
        }
        let right = try await Self.handed { done in store.right(forIdentifier: "com.example.cb") { done($0, $1) } }
        right.linuxPrompt = nil
        #expect(try await right.key.publicKey.bytes == saved.key.publicKey.bytes)
        let exported = try await Self.handed { done in right.key.publicKey.exportBytes { done($0, $1) } }
        #expect(exported.count == 65 && exported.first == 0x04)

        try d.touch("root-1")
        try await Self.finished { done in right.authorize(localizedReason: "Open") { done($0) } }
        #expect(right.state == .authorized)
        #expect(try await Self.handed { done in right.secret.loadData { done($0, $1) } } == Data("cb".utf8))

        let message = Data("transfer 10".utf8)
        let signature = try await Self.handed { done in
            right.key.sign(message, algorithm: .ecdsaSignatureMessageX962SHA256) { done($0, $1) }
        }
        try await Self.finished { done in
            right.key.publicKey.verify(message, signature: signature, algorithm: .ecdsaSignatureMessageX962SHA256) {
                done($0)
            }
        }
        await Self.expectSecurityError(errSecVerifyFailed) {
            try await Self.finished { done in
                right.key.publicKey.verify(
                    Data("transfer 99".utf8), signature: signature, algorithm: .ecdsaSignatureMessageX962SHA256
                ) { done($0) }
            }
        }

        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            right.deauthorize { done.resume() }
        }
        #expect(right.state == .unknown)
        try await Self.finished { done in store.removeRight(forIdentifier: "com.example.cb") { done($0) } }
        await #expect(throws: LAError.self) {
            _ = try await Self.handed { done in store.right(forIdentifier: "com.example.cb") { done($0, $1) } }
        }
    }

    /// Every signing algorithm of Apple's for P-256 keys: after one `authorize` the daemon signs with each, the key
    /// verifies; a `…DigestX962…` algorithm signs the caller's digest. Verification failures and
    /// algorithms a key does not offer are Security's typed errors, not text.
    @Test func privateKey_signsWithEveryApplesP256Algorithm_andVerifyReportsSecuritysCodes() async throws {
        let d = try Daemon()
        let right = try await Self.saved(d)
        let message = Data("transfer 10".utf8)
        let signing: [(SecKeyAlgorithm, Data)] = [
            (.ecdsaSignatureMessageX962SHA224, message), (.ecdsaSignatureMessageX962SHA256, message),
            (.ecdsaSignatureMessageX962SHA384, message), (.ecdsaSignatureMessageX962SHA512, message),
            (.ecdsaSignatureMessageRFC4754SHA256, message),
            (.ecdsaSignatureDigestX962SHA224, Data(KeyAlgorithm.Hash.sha224.digest(Array(message)))),
            (.ecdsaSignatureDigestX962SHA256, Data(KeyAlgorithm.Hash.sha256.digest(Array(message)))),
            (.ecdsaSignatureDigestX962SHA384, Data(KeyAlgorithm.Hash.sha384.digest(Array(message)))),
            (.ecdsaSignatureDigestX962SHA512, Data(KeyAlgorithm.Hash.sha512.digest(Array(message)))),
        ]
        try d.touch("root-1")
        try await right.authorize(localizedReason: "Sign")  // one finger for all of them
        for (algorithm, input) in signing {
            #expect(right.key.canSign(using: algorithm) && right.key.publicKey.canVerify(using: algorithm))
            let signature = try await right.key.sign(input, algorithm: algorithm)
            try await right.key.publicKey.verify(input, signature: signature, algorithm: algorithm)
            var changed = input
            changed[changed.startIndex] ^= 1
            await Self.expectSecurityError(errSecVerifyFailed) {
                try await right.key.publicKey.verify(changed, signature: signature, algorithm: algorithm)
            }
        }
        #expect(SecKeyAlgorithm.ecdsaSignatureMessageX962SHA384.rawValue == "algid:sign:ECDSA:message-X962:SHA384")
        let notOffered = SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PSS:SHA256")
        #expect(!right.key.publicKey.canVerify(using: notOffered))
        await Self.expectSecurityError(errSecParam) {
            try await right.key.publicKey.verify(message, signature: Data([0]), algorithm: notOffered)
        }
        await Self.expectSecurityError(errSecParam) {
            _ = try await right.key.publicKey.encrypt(message, algorithm: .ecdsaSignatureMessageX962SHA256)
        }
        // A digest of the wrong length for its algorithm.
        await Self.expectSecurityError(errSecParam) {
            try await right.key.publicKey.verify(
                message, signature: Data([0]), algorithm: .ecdsaSignatureDigestX962SHA256)
        }
    }

    /// `body` throws Security's error of `code` (`NSOSStatusErrorDomain`), with a line to show.
    static func expectSecurityError(
        _ code: OSStatus, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void
    ) async {
        do {
            try await body()
            Issue.record("no error", sourceLocation: sourceLocation)
        } catch {
            let error = error as NSError
            #expect(error.domain == NSOSStatusErrorDomain, sourceLocation: sourceLocation)
            #expect(error.code == Int(code), sourceLocation: sourceLocation)
            #expect(!error.localizedDescription.isEmpty, sourceLocation: sourceLocation)
        }
    }

    /// A completion form's `(value?, error?)` as the async form's value or error.
    static func handed<T: Sendable>(
        _ call: (@escaping @Sendable (T?, (any Error)?) -> Void) -> Void
    ) async throws -> T {
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<T, any Error>) in
            call { value, error in
                if let value {
                    done.resume(returning: value)
                } else {
                    done.resume(throwing: error ?? LAError(.systemCancel))
                }
            }
        }
    }

    /// A completion form's `error?` as the async form's return or throw.
    static func finished(_ call: (@escaping @Sendable ((any Error)?) -> Void) -> Void) async throws {
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
            call { error in
                if let error { done.resume(throwing: error) } else { done.resume() }
            }
        }
    }

    @Test func currentSetRight_whenAnotherFingerIsEnrolled_isGone() async throws {
        let d = try Daemon()
        _ = try await Self.saved(d, .biometryCurrentSet)
        let store = LARightStore(socketPath: d.socketPath)
        _ = try await store.right(forIdentifier: "com.example.vault")
        try await d.enroll(finger: .leftIndex, printID: "root-2")  // root enrols without a proof
        await #expect(throws: LAError.self) { _ = try await store.right(forIdentifier: "com.example.vault") }
    }

    @Test func removeRight_thenFetch_fails() async throws {
        let d = try Daemon()
        let right = try await Self.saved(d)
        let store = LARightStore(socketPath: d.socketPath)
        try await store.removeRight(right)
        await #expect(throws: LAError.self) { _ = try await store.right(forIdentifier: "com.example.vault") }
    }
}
