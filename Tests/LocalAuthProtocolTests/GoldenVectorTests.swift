// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import LocalAuthProtocol

/// The golden vectors shared with the C codec (`pam/wire.c`).
struct GoldenVector: CustomTestStringConvertible, Sendable {
    let name: String
    let bytes: [UInt8]
    var testDescription: String { name }

    static let all: [GoldenVector] = Fixture.records("golden.txt").map { text in
        let parts = text.split(separator: " ")
        return GoldenVector(name: String(parts[0]), bytes: Fixture.bytes(hex: parts[1]))
    }
    static var valid: [GoldenVector] { all.filter { !$0.name.hasPrefix("invalid-") } }
    static var invalid: [GoldenVector] { all.filter { $0.name.hasPrefix("invalid-") } }
}

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct GoldenVectorTests {
    @Test func goldenFile_hasValidAndInvalidVectors() {
        #expect(GoldenVector.valid.count >= 30)
        #expect(GoldenVector.invalid.count >= 10)
    }

    @Test(arguments: GoldenVector.valid)
    func decode_whenVectorIsValid_reencodesToSameBytes(_ vector: GoldenVector) throws {
        var reader = FrameReader()
        reader.append(vector.bytes)
        let frame = try #require(try reader.next())
        #expect(frame.encoded() == vector.bytes)
        #expect(reader.pendingByteCount == 0)
    }

    @Test(arguments: GoldenVector.invalid)
    func decode_whenVectorIsInvalid_refusesIt(_ vector: GoldenVector) {
        var reader = FrameReader()
        reader.append(vector.bytes)
        #expect(throws: ProtocolError.self) { _ = try reader.next() }
    }

    @Test(arguments: GoldenVector.valid)
    func decode_whenBytesArriveOneByOne_yieldsFrameOnlyAtTheEnd(_ vector: GoldenVector) throws {
        var reader = FrameReader()
        for (i, byte) in vector.bytes.enumerated() {
            reader.append([byte])
            let frame = try reader.next()
            #expect((frame != nil) == (i == vector.bytes.count - 1))
        }
    }

    @Test func typedMessages_matchTheirGoldenVectors() throws {
        func bytes(_ name: String) -> [UInt8] { GoldenVector.all.first { $0.name == name }!.bytes }
        #expect(Hello(client: "pam_localauth 0.1").frame.encoded() == bytes("hello"))
        #expect(Request.status(user: "alice").frame.encoded() == bytes("status-user"))
        #expect(
            Request.canEvaluate(policy: .deviceOwnerAuthentication, user: "alice").frame.encoded()
                == bytes("can-evaluate"))
        let pam = EvaluateOptions(
            policy: .deviceOwnerAuthenticationWithBiometrics, user: "alice", service: "sudo", tty: "/dev/pts/0",
            reason: "sudo")
        var pamFrame = Request.evaluate(pam).frame
        pamFrame.append(.tries, int: 3)  // the vector carries the defaults explicitly, as the C client sends them
        pamFrame.append(.timeoutMs, int: 30000)
        #expect(pamFrame.encoded() == bytes("evaluate-pam"))
        let owner = EvaluateOptions(
            policy: .deviceOwnerAuthentication, user: "bob", service: "vault", reason: "unlock the vault",
            fallbackTitle: "",
            cancelTitle: "Not now", flags: [.interactionNotAllowed, .passcodeCapable], reuseSeconds: 60,
            timeoutMs: 10000)
        #expect(Request.evaluate(owner).frame.encoded() == bytes("evaluate-owner"))
        #expect(Request.delete(user: "alice", finger: nil, all: true).frame.encoded() == bytes("delete-all"))
        #expect(Request.simulate(action: "touch", argument: "finger-1").frame.encoded() == bytes("simulate-touch"))
        #expect(
            ServerMessage.event(Event(.noMatch, "Fingerprint not recognised (2 tries left)", triesLeft: 2)).frame
                .encoded()
                == bytes("event-no-match"))
        // The English message for old clients, the phrase for the client's own language.
        #expect(
            ServerMessage.event(
                Event(
                    .noMatch, "Not recognised, try again (2 left)", triesLeft: 2, phrase: .noMatch(triesLeft: 2))
            ).frame.encoded() == bytes("event-no-match-phrase"))
        #expect(ServerMessage.welcome(version: 1, server: "localauthd 0.1").frame.encoded() == bytes("welcome"))
        #expect(
            Request.rightSave(
                user: nil, identifier: "com.example.vault", requirement: .biometryCurrentSet,
                secret: Array("vault key".utf8)
            ).frame.encoded() == bytes("right-save"))
        let sign = RightUseOptions(
            identifier: "com.example.vault", operation: .sign, algorithm: "ecdsaSignatureMessageX962SHA256",
            data: Array("transfer 10".utf8),
            prompt: PromptOptions(service: "LAContext:vault", reason: "Sign the transfer", flags: [.passcodeCapable]))
        #expect(Request.rightUse(sign).frame.encoded() == bytes("right-use-sign"))
        var reader = FrameReader()
        reader.append(bytes("right-use-sign"))
        #expect(try Request(frame: try #require(try reader.next())) == .rightUse(sign))
        var secret = Frame(.result)
        secret.append(.data, bytes: Array("vault key".utf8))
        #expect(
            ServerMessage.result(RequestResult(.success, "The secret is released", extra: secret.fields)).frame
                .encoded()
                == bytes("result-right-secret"))
        #expect(Request.passwordUsed(user: "alice", service: "login").frame.encoded() == bytes("password-used"))
        #expect(Frame(.watch).encoded() == bytes("watch"))
        #expect(
            ServerMessage.event(Event(.environmentChanged, "The environment may have changed")).frame.encoded()
                == bytes("event-environment-changed"))
    }

    @Test func decodeRequest_whenEvaluateVector_readsEveryOption() throws {
        var reader = FrameReader()
        reader.append(GoldenVector.all.first { $0.name == "evaluate-owner" }!.bytes)
        guard case .evaluate(let o) = try Request(frame: try #require(try reader.next())) else {
            Issue.record("not an evaluate")
            return
        }
        #expect(o.policy == .deviceOwnerAuthentication)
        #expect(o.user == "bob")
        #expect(o.fallbackTitle == "")
        #expect(o.cancelTitle == "Not now")
        #expect(o.flags == [.interactionNotAllowed, .passcodeCapable])
        #expect(o.reuseSeconds == 60)
        #expect(o.tries == 3)
        #expect(o.timeoutMs == 10000)
    }

    @Test func decode_whenTagIsUnknown_skipsIt() throws {
        var reader = FrameReader()
        reader.append(GoldenVector.all.first { $0.name == "hello-unknown-tag" }!.bytes)
        let hello = try Hello(frame: try #require(try reader.next()))
        #expect(hello.client == "x")
    }

    @Test func devicesResult_roundTripsNestedFields() throws {
        var reader = FrameReader()
        reader.append(GoldenVector.all.first { $0.name == "result-devices" }!.bytes)
        let result = try RequestResult(frame: try #require(try reader.next()))
        let device = try DeviceInfo(field: try #require(result.fields.bytes(.device)))
        #expect(device.driver == "virtual_device")
        #expect(device.capabilities == .identify)
        #expect(device.enrollStages == 5)
    }
}

@Suite struct RequestValidationTests {
    @Test func evaluate_whenTriesOutOfRange_isRefused() {
        var f = Frame(.evaluate)
        f.append(.policy, int: 1)
        f.append(.tries, int: 9)
        #expect(throws: RequestError.outOfRange(.tries, "9 is outside 1…5")) { try Request(frame: f) }
    }

    @Test func evaluate_whenPolicyUnknown_isRefused() {
        var f = Frame(.evaluate)
        f.append(.policy, int: 9)
        #expect(throws: RequestError.self) { try Request(frame: f) }
    }

    @Test func enroll_whenFingerNameUnknown_isRefused() {
        var f = Frame(.enroll)
        f.append(.finger, string: "sixth-finger")
        #expect(throws: RequestError.self) { try Request(frame: f) }
    }

    @Test func request_whenFrameIsAServerMessage_isRefused() {
        #expect(throws: RequestError.notARequest(.welcome)) { try Request(frame: Frame(.welcome)) }
    }

    @Test(arguments: [
        Request.status(user: nil), .canEvaluate(policy: .deviceOwnerAuthenticationWithBiometrics, user: nil),
        .enroll(user: "a", finger: .leftThumb), .list(user: nil), .delete(user: "a", finger: .rightRing, all: false),
        .devices, .passcodeSet(user: nil, passcode: "1234", oldPasscode: "4321"),
        .passcodeRemove(user: "a", oldPasscode: nil),
        .lockoutReset(user: "a"), .passwordUsed(user: "a", service: "login"), .passwordUsed(user: nil, service: nil),
        .importFprintd(from: nil), .importFprintd(from: "/var/lib/fprint"),
    ])
    func request_roundTripsThroughItsFrame(_ request: Request) throws {
        var reader = FrameReader()
        reader.append(request.frame.encoded())
        #expect(try Request(frame: try #require(try reader.next())) == request)
    }

    @Test func frameReader_whenLengthTooLarge_refusesBeforeTheBodyArrives() {
        var reader = FrameReader()
        reader.append([0, 0, 0x10, 0x01])  // 4097
        #expect(throws: ProtocolError.tooLarge(4097)) { _ = try reader.next() }
    }

    @Test func frameReader_whenTwoFramesArriveTogether_yieldsBoth() throws {
        var reader = FrameReader()
        reader.append(Request.devices.frame.encoded() + Request.list(user: "x").frame.encoded())
        #expect(try reader.next()?.type == .devices)
        #expect(try reader.next()?.type == .list)
        #expect(try reader.next() == nil)
    }
}
