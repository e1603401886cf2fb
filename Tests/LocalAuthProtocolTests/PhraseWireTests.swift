// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import LocalAuthProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// One line of `Fixtures/protocol/phrases.txt`, shared with the module's renderer (pam/tests/test_phrases.c).
struct PhraseVector: CustomTestStringConvertible, Sendable {
    let name: String
    let bytes: [UInt8]
    let english: String
    var testDescription: String { name }

    static let all: [PhraseVector] = Fixture.records("phrases.txt").map { text in
        let parts = text.split(separator: "\t", omittingEmptySubsequences: false)
        return PhraseVector(name: String(parts[0]), bytes: Fixture.bytes(hex: parts[1]), english: String(parts[2]))
    }
    static var valid: [PhraseVector] { all.filter { !$0.name.hasPrefix("invalid-") } }
    static var invalid: [PhraseVector] { all.filter { $0.name.hasPrefix("invalid-") } }
}

@Suite struct PhraseWireTests {
    @Test(arguments: PhraseVector.valid)
    func vector_decodesToTheEnglishLine_andEncodesBackByteForByte(_ v: PhraseVector) throws {
        let phrase = try #require(Phrase(wireValue: v.bytes))
        #expect(phrase.english == v.english)
        // "prompt" with an empty reason decodes to nil, which encodes as "" again.
        #expect(phrase.wireValue == v.bytes)
    }

    @Test(arguments: PhraseVector.invalid)
    func invalidVector_isRefused_soTheClientShowsTheMessage(_ v: PhraseVector) {
        #expect(Phrase(wireValue: v.bytes) == nil)
    }

    @Test func vectors_areThere() {
        #expect(PhraseVector.valid.count >= 20 && PhraseVector.invalid.count >= 6)
    }

    /// Every case of the core's phrases goes through the wire and comes back equal.
    @Test func everyPhrase_roundTrips() {
        let label = RequestLabel(program: "sudo", account: "alice")
        let rightUse = RequestLabel(program: "/usr/bin/python3", account: "alice", right: "com.example.vault")
        let reasons: [ReaderUnavailable] = [
            .noReader, .lidClosed, .remoteSession, .connectionOrphaned, .requesterUnknown, .noLoginSession,
            .notTheTargetsSession("alice"), .sessionNotInFront("alice"), .readerBusy(by: nil), .readerBusy(by: label),
            .readerBusy(by: rightUse),
            .readerShareUsed(account: "alice", shareMs: 60_000, retryInMs: 1500),
        ]
        var all: [Phrase] = [
            .authenticatedWithFinger, .authenticatedWithPasscode, .authenticatedByRecentSuccess, .policyCanBeEvaluated,
            .fingerNotRecognised, .userChoseFallback, .cancelled(.userCancel), .cancelled(.appCancel),
            .cancelled(.systemCancel), .timedOutWaitingForFinger, .timedOutWaitingForPasscode,
            .timedOutWaitingForTurn(user: "alice"), .interactionNotAllowed, .passcodeNeededButClientCannotAsk,
            .noPasscodeAndNoFinger, .noPasscodeSet, .noFingerEnrolled, .fingersOnDisconnectedReader, .stateUnreadable,
            .stateFromNewerVersion, .attemptNotRecorded,
            .biometryLocked(passcodeSet: true), .biometryLocked(passcodeSet: false), .readerFailed("io error"),
            .placeFinger(nil), .forRequest(.placeFinger(.rightIndex), label),
            .forRequest(.placeFinger(.rightIndex), rightUse), .noMatch(triesLeft: 2),
            .enterPasscode, .wrongPasscode, .passcodeLocked(remainingMs: 45_000), .fallbackUsePasscode,
            .fallbackEnterPassword, .verbatim("Use PIN"),
            .prompt(reason: "unlock the vault", .enterPasscode, cancelTitle: "Not now"),
            .both(.enterPasscode, .passcodeLocked(remainingMs: 1000)), .passcodeSet(user: "alice"),
            .passcodeRemoved(user: "alice"), .noPasscodeToRemove(user: "alice"), .currentPasscodeNeeded,
            .currentPasscodeWrong, .passcodeNotStored, .passcodeNotHashed,
            .firstPasscodeNeedsFinger(user: "alice", because: .fingerNotAvailable(.noReader)),
        ]
        all += FingerName.allCases.map { .placeFinger($0) }
        all += FingerName.allCases.map { .said("The %s is enrolled already; delete it first", .fingerName($0)) }
        all.append(.said("No reader"))
        all += RetryHint.allCases.map { .retry($0) }
        all += [
            .passwordRequired(.restart), .passwordRequired(.maxAge(ms: 30 * 86_400_000)),
            .passwordRequired(.idle(passwordMs: 3 * 86_400_000, fingerMs: 8 * 3_600_000)),
            .passwordRequired(.firstSession), .passwordRequired(.useUnknown),
            .passwordUseNotRecorded(.connectionOrphaned), .passwordUseNotRecorded(.remoteSession),
            .passwordUseNotRecorded(.noSession), .passwordUseNotRecorded(.notOwnSession),
            .passwordUseNotRecorded(.sessionClass("greeter")), .passwordUseNotRecorded(.sessionNotActive),
        ]
        all += reasons.map { .fingerNotAvailable($0) }
        for phrase in all {
            let value = phrase.wireValue
            #expect(value != nil, "\(phrase)")
            #expect(value.flatMap { Phrase(wireValue: $0) } == phrase, "\(phrase)")
        }
    }

    /// A right's use names the right wherever its request is named, under identifiers of their own:
    /// a client that knows only the two-argument label (the PAM module before issue 26) shows the
    /// English `message`, never a label without the right. Without a right the tokens are as before.
    @Test func label_ofARightsUse_namesTheRight_underItsOwnIdentifiers() {
        let plain = RequestLabel(program: "/usr/bin/sudo", account: "alice")
        let right = RequestLabel(program: "/usr/bin/python3.11", account: "alice", right: "com.example.vault")
        #expect(
            Phrase.fingerNotAvailable(.readerBusy(by: right)).english
                == "Fingerprint not available: the reader is in use by /usr/bin/python3.11 for alice, asking to "
                + "release com.example.vault; try again when it is done")
        #expect(
            Phrase.fingerNotAvailable(.readerBusy(by: right)).tokens
                == [
                    .id("fingerNotAvailable"), .id("readerBusyByRight"), .text("/usr/bin/python3.11"),
                    .text("alice"), .text("com.example.vault"),
                ])
        #expect(
            Phrase.fingerNotAvailable(.readerBusy(by: plain)).tokens
                == [.id("fingerNotAvailable"), .id("readerBusyBy"), .text("/usr/bin/sudo"), .text("alice")])
        #expect(Phrase.forRequest(.placeFinger(nil), right).identifier == "forRightRequest")
        #expect(Phrase.forRequest(.placeFinger(nil), plain).identifier == "forRequest")
        // The old identifier with a third argument is malformed, not a right's label.
        #expect(
            Phrase(tokens: [
                .id("fingerNotAvailable"), .id("readerBusyBy"), .text("p"), .text("alice"), .text("vault"),
            ]) == nil)
    }

    /// A phrase too long for one field is left out: the English `message` stands alone.
    @Test func phraseLongerThanAField_isLeftOut_andTheMessageStays() throws {
        let long = Phrase.prompt(reason: String(repeating: "x", count: 1100), .enterPasscode, cancelTitle: nil)
        #expect(long.wireValue == nil)
        let event = Event(.passcodeNeeded, long.english, phrase: long)
        let decoded = try Event(frame: try Frame.decode(body: event.frame.encode().dropFirst(4)))
        #expect(decoded.phrase == nil)
        #expect(decoded.message.hasPrefix("xxx"))
    }

    /// Old clients: the same frame with `message` first; the new field is one they skip.
    @Test func eventAndResult_carryTheMessageAndThePhrase() throws {
        let phrase = Phrase.noMatch(triesLeft: 2)
        let event = Event(.noMatch, phrase.english, triesLeft: 2, phrase: phrase)
        let frame = try Frame.decode(body: event.frame.encode().dropFirst(4))
        #expect(frame.string(.message) == "Not recognised, try again (2 left)")
        #expect(try Event(frame: frame).phrase == phrase)
        let result = RequestResult(
            .authenticationFailed, Phrase.fingerNotRecognised.english, phrase: .fingerNotRecognised)
        let back = try RequestResult(frame: try Frame.decode(body: result.frame.encode().dropFirst(4)))
        #expect(back.phrase == .fingerNotRecognised && back.extra.isEmpty)
    }

    /// The wording by context: the module's password, an app's passcode, Apple's app name before the reason.
    @Test func style_wordsTheFallbackAndTheApplication() {
        let t = EnglishText()
        #expect(
            Phrase.biometryLocked(passcodeSet: false).text(t, style: PhraseStyle(fallbackIsPassword: true))
                == "Too many attempts: use your password")
        #expect(Phrase.biometryLocked(passcodeSet: true).text(t) == "Too many attempts: use your passcode")
        let prompt = Phrase.prompt(reason: "unlock the vault", .placeFinger(.rightIndex), cancelTitle: "Cancel")
        #expect(
            prompt.text(t, style: PhraseStyle(application: "vault"))
                == "\"vault\" wants to unlock the vault: Place your right index finger on the reader [Cancel]")
        #expect(prompt.english == "unlock the vault: Place your right index finger on the reader [Cancel]")
    }
}
