// SPDX-License-Identifier: Apache-2.0
import LocalAuthCore
import LocalAuthProtocol
import LocalAuthSocketDoor
import Testing

@testable import LocalAuthDaemon

/// The socket door says the daemon's typed answer as the RESULT frames the daemon wrote by hand
/// before the answer was typed (issue 28): the same fields, in the same order, byte for byte.
@Suite struct WireEncodingTests {
    /// The RESULT the daemon built before: code, message, phrase, then `extra` as written.
    static func frame(_ code: ResultCode, _ phrase: Phrase?, _ english: String, _ extra: (inout Frame) -> Void)
        -> [UInt8]
    {
        var fields = Frame(.result)
        extra(&fields)
        let result =
            phrase.map { RequestResult(code, $0, extra: fields.fields) }
            ?? RequestResult(code, english, extra: fields.fields)
        return ServerMessage.result(result).encodedForWire()
    }

    static func wire(_ answer: Answer) -> [UInt8] { ServerMessage.result(answer.result).encodedForWire() }

    @Test func status_withAnAccountWhosePasswordIsRequired_isTheReadersThenTheAccountsThenTheRulesFields() {
        let line = Phrase.said("Reader: %s", .verbatim("Virtual"))
        let facts = Answer.StatusFacts(
            readerPresent: true, biometryType: .touchID,
            account: Answer.AccountFacts(
                enrolledCount: 2, biometryLocked: false, passcodeSet: true, password: .required(.restart),
                askedAtMs: 7))
        let expected = Self.frame(.success, line, line.english) { f in
            f.append(.readerPresent, bool: true)
            f.append(.biometryType, int: BiometryKind.touchID.rawValue)
            f.append(.enrolledCount, int: 2)
            f.append(.biometryLocked, bool: false)
            f.append(.passcodeSet, bool: true)
            f.append(.passwordRule, int: 2)
            f.append(.passwordReason, string: PasswordRequiredReason.restart.message)
            f.append(.passwordReasonPhrase, bytes: Phrase.passwordRequired(.restart).wireValue!)
        }
        #expect(Self.wire(Answer(.success, line, .status(facts))) == expected)
    }

    @Test func status_withoutAnAccount_andAFingerUntil_keepTheirFields() {
        let bare = Answer.StatusFacts(readerPresent: false, biometryType: .none)
        let line = Phrase.said("No reader")
        #expect(
            Self.wire(Answer(.success, line, .status(bare)))
                == Self.frame(.success, line, line.english) { f in
                    f.append(.readerPresent, bool: false)
                    f.append(.biometryType, int: BiometryKind.none.rawValue)
                })
        var until = bare
        until.account = Answer.AccountFacts(
            enrolledCount: 0, biometryLocked: true, passcodeSet: false, password: .notRequired(forMs: 40),
            askedAtMs: 2)
        #expect(
            Self.wire(Answer(.success, line, .status(until)))
                == Self.frame(.success, line, line.english) { f in
                    f.append(.readerPresent, bool: false)
                    f.append(.biometryType, int: BiometryKind.none.rawValue)
                    f.append(.enrolledCount, int: 0)
                    f.append(.biometryLocked, bool: true)
                    f.append(.passcodeSet, bool: false)
                    f.append(.passwordRule, int: 1)
                    f.append(.fingerUntilMs, int: 42)
                })
    }

    @Test func enrolment_isTheFingerThenTheDomainState_andAListEachFingerOnce() {
        let line = Phrase.said("Enrolled the %1$s of %2$s", .fingerName(.rightIndex), .verbatim("alice"))
        #expect(
            Self.wire(Answer(.success, line, .enrolled(.rightIndex, domainState: [1, 2, 3])))
                == Self.frame(.success, line, line.english) { f in
                    f.append(.finger, string: "right-index-finger")
                    f.append(.domainState, bytes: [1, 2, 3])
                })
        let listed = Phrase.said("Fingers enrolled for %1$s: %2$s", .verbatim("alice"), .verbatim("2"))
        #expect(
            Self.wire(Answer(.success, listed, .fingers([.rightIndex, .leftThumb])))
                == Self.frame(.success, listed, listed.english) { f in
                    f.append(.finger, string: "right-index-finger")
                    f.append(.finger, string: "left-thumb")
                })
    }

    @Test func canEvaluate_isTheDecisionsFieldsThenTheLid() {
        let decision = Decision(
            .biometryNotAvailable, .fingerNotAvailable(.lidClosed), domainState: [9], biometryType: .touchID,
            biometryLocked: false, passcodeSet: true)
        #expect(
            Self.wire(Answer(decision, .sensorInaccessible))
                == Self.frame(.biometryNotAvailable, decision.phrase, decision.phrase.english) { f in
                    f.append(.biometryType, int: BiometryKind.touchID.rawValue)
                    f.append(.domainState, bytes: [9])
                    f.append(.biometryLocked, bool: false)
                    f.append(.passcodeSet, bool: true)
                    f.append(.sensorInaccessible, bool: true)
                })
    }

    @Test func rights_andTheirData_keepTheirFields() {
        let saved = Phrase.said("Right saved")
        #expect(
            Self.wire(Answer(.success, saved, .right(requirement: .biometryAny, publicKey: [4, 5])))
                == Self.frame(.success, saved, saved.english) { f in
                    f.append(.requirement, int: RightRequirement.biometryAny.rawValue)
                    f.append(.publicKey, bytes: [4, 5])
                })
        #expect(
            Self.wire(Answer(.success, saved, .data([])))
                == Self.frame(.success, saved, saved.english) { f in f.append(.data, bytes: []) })
    }

    @Test func anEnglishOnlyLine_goesOutWithoutAPhrase() {
        let answer = Answer(.notSupported, english: "Simulation needs a daemon started with --virtual-reader")
        #expect(answer.result.phrase == nil)
        #expect(
            Self.wire(answer)
                == Self.frame(.notSupported, nil, "Simulation needs a daemon started with --virtual-reader") { _ in })
    }

    @Test func devices_areOneNestedFieldEach() {
        let info = DeviceInfo(
            name: "Virtual", driver: "virtual_device", deviceId: "0", enrollStages: 5, capabilities: [.identify])
        let line = Phrase.said("Readers: %s", .verbatim("1"))
        #expect(
            Self.wire(Answer(.success, line, .devices([info])))
                == Self.frame(.success, line, line.english) { f in f.fields.append(info.field) })
    }
}
