// SPDX-License-Identifier: Apache-2.0
// A phrase on the wire (docs/protocol.md, "Phrases"): the `phrase` field of an EVENT or RESULT holds a
// nested field list, the phrase's tokens in prefix order — `phraseId` (text) names a phrase, then its
// arguments in order: `phraseText` (text), `phraseNumber` (int), or a whole nested phrase (its own
// `phraseId` and arguments). Each identifier has a fixed list of arguments, so the order alone
// rebuilds the tree. A client that does not know an identifier, or finds the arguments wrong, shows
// the English `message` instead: a newer daemon never garbles an older client's line.

/// One token of a phrase on the wire.
public enum PhraseToken: Equatable, Sendable {
    case id(String)
    case text(String)
    case number(Int64)
}

extension Phrase {
    /// The most phrases nested in one another that a reader accepts.
    public static let maxWireDepth = 8
    /// The most arguments of a `catalogued` line.
    public static let maxArguments: Int64 = 8

    /// The phrase's identifier on the wire (`noMatch`, `placeFinger`, …): audit lines and journal
    /// records carry it beside the English line.
    public var identifier: String {
        guard case .id(let s)? = tokens.first else { return "" }
        return s
    }

    /// The phrase's tokens in prefix order.
    public var tokens: [PhraseToken] {
        var out: [PhraseToken] = []
        appendTokens(to: &out)
        return out
    }

    /// The `phrase` field's value; nil when it would not fit in one field (the English `message`
    /// then stands alone).
    public var wireValue: [UInt8]? {
        var f = Frame(.event)
        for token in tokens {
            switch token {
            case .id(let s): f.append(.phraseId, string: s)
            case .text(let s): f.append(.phraseText, string: s)
            case .number(let n): f.append(.phraseNumber, int: n)
            }
        }
        // A client's text (a reason, a cancel title) can make a token too long: never a trap.
        guard let bytes = try? Frame.encode(fields: f.fields), bytes.count <= Wire.maxFieldSize else { return nil }
        return bytes
    }

    /// The phrase a `phrase` field carries; nil when it is malformed, names an identifier this client
    /// does not know, or has arguments other than its identifier's.
    public init?(wireValue bytes: [UInt8]) {
        guard let fields = try? Frame.decodeFields(bytes[...]) else { return nil }
        var tokens: [PhraseToken] = []
        for field in fields {
            let f = Frame(.event, [field])
            switch field.tag {
            case .phraseId: guard let s = f.string(.phraseId) else { return nil }; tokens.append(.id(s))
            case .phraseText: guard let s = f.string(.phraseText) else { return nil }; tokens.append(.text(s))
            case .phraseNumber: guard let n = f.int(.phraseNumber) else { return nil }; tokens.append(.number(n))
            default: return nil
            }
        }
        self.init(tokens: tokens)
    }

    /// The phrase of exactly these tokens, or nil.
    public init?(tokens: [PhraseToken]) {
        var rest = tokens[...]
        guard let phrase = PhraseParser.phrase(&rest, depth: 0), rest.isEmpty else { return nil }
        self = phrase
    }

    private func appendTokens(to out: inout [PhraseToken]) {
        func id(_ s: String) { out.append(.id(s)) }
        func text(_ s: String) { out.append(.text(s)) }
        func number(_ n: Int64) { out.append(.number(n)) }
        switch self {
        // The identifiers without arguments: named in `PhraseParser.simplePhrases`, which reads them back.
        case .authenticatedWithFinger, .authenticatedWithPasscode, .authenticatedByRecentSuccess, .policyCanBeEvaluated,
            .fingerNotRecognised, .userChoseFallback, .timedOutWaitingForFinger, .timedOutWaitingForPasscode,
            .interactionNotAllowed, .passcodeNeededButClientCannotAsk, .noPasscodeAndNoFinger, .noPasscodeSet,
            .noFingerEnrolled, .fingersOnDisconnectedReader, .stateUnreadable, .stateFromNewerVersion,
            .attemptNotRecorded,
            .enterPasscode,
            .wrongPasscode, .fallbackUsePasscode, .fallbackEnterPassword, .currentPasscodeNeeded, .currentPasscodeWrong,
            .passcodeNotStored, .passcodeNotHashed:
            id(PhraseParser.simpleName(of: self))
        case .cancelled(let code): id("cancelled"); number(code.rawValue)
        case .timedOutWaitingForTurn(let user): id("timedOutWaitingForTurn"); text(user)
        case .biometryLocked(let passcodeSet): id("biometryLocked"); number(passcodeSet ? 1 : 0)
        case .fingerNotAvailable(let why): id("fingerNotAvailable"); why.appendTokens(to: &out)
        case .readerFailed(let why): id("readerFailed"); text(why)
        case .placeFinger(let finger): id("placeFinger"); text(finger?.rawValue ?? "")
        case .forRequest(let phrase, let label):
            // A right's use has its own identifier, so that a client that knows only the two-argument
            // label shows the English line rather than a label without the right.
            id(label.right == nil ? "forRequest" : "forRightRequest"); phrase.appendTokens(to: &out)
            text(label.program); text(label.account)
            if let right = label.right { text(right) }
        case .noMatch(let left): id("noMatch"); number(Int64(left))
        case .passcodeLocked(let ms): id("passcodeLocked"); number(ms)
        case .retry(let hint): id("retry"); number(hint.rawValue)
        case .verbatim(let s): id("verbatim"); text(s)
        case .prompt(let reason, let instruction, let cancel):
            id("prompt"); text(reason ?? ""); instruction.appendTokens(to: &out); text(cancel ?? "")
        case .both(let a, let b): id("both"); a.appendTokens(to: &out); b.appendTokens(to: &out)
        case .passcodeSet(let user): id("passcodeSet"); text(user)
        case .passcodeRemoved(let user): id("passcodeRemoved"); text(user)
        case .noPasscodeToRemove(let user): id("noPasscodeToRemove"); text(user)
        case .firstPasscodeNeedsFinger(let user, let because):
            id("firstPasscodeNeedsFinger"); text(user); because.appendTokens(to: &out)
        case .passwordRequired(let reason):
            switch reason {
            case .restart, .firstSession, .useUnknown: id(PhraseParser.simpleName(of: self))
            case .maxAge(let ms): id("passwordRequiredAfterMaxAge"); number(ms)
            case .idle(let passwordMs, let fingerMs): id("passwordRequiredIdle"); number(passwordMs); number(fingerMs)
            }
        case .passwordUseNotRecorded(let refusal):
            switch refusal {
            case .connectionOrphaned, .remoteSession, .noSession, .notOwnSession, .sessionNotActive:
                id(PhraseParser.simpleName(of: self))
            case .sessionClass(let name): id("passwordUseNotRecordedSessionClass"); text(name)
            }
        case .catalogued(let template, let arguments):
            id("catalogued"); text(template); number(Int64(arguments.count))
            for argument in arguments { argument.appendTokens(to: &out) }
        case .fingerName(let finger): id("fingerName"); text(finger.rawValue)
        }
    }
}

extension ReaderUnavailable {
    fileprivate func appendTokens(to out: inout [PhraseToken]) {
        switch self {
        case .noReader: out.append(.id("noReader"))
        case .lidClosed: out.append(.id("lidClosed"))
        case .remoteSession: out.append(.id("remoteSession"))
        case .connectionOrphaned: out.append(.id("connectionOrphaned"))
        case .requesterUnknown: out.append(.id("requesterUnknown"))
        case .noLoginSession: out.append(.id("noLoginSession"))
        case .notTheTargetsSession(let user): out += [.id("notTheTargetsSession"), .text(user)]
        case .sessionNotInFront(let user): out += [.id("sessionNotInFront"), .text(user)]
        case .readerBusy(let by):
            if let by, let right = by.right {
                out += [.id("readerBusyByRight"), .text(by.program), .text(by.account), .text(right)]
            } else if let by {
                out += [.id("readerBusyBy"), .text(by.program), .text(by.account)]
            } else {
                out.append(.id("readerBusy"))
            }
        case .readerShareUsed(let account, let share, let retry):
            out += [.id("readerShareUsed"), .text(account), .number(share), .number(retry)]
        }
    }
}

/// Recursive descent over the tokens, bounded in depth.
private enum PhraseParser {
    static func text(_ rest: inout ArraySlice<PhraseToken>) -> String? {
        guard case .text(let s)? = rest.first else { return nil }
        rest = rest.dropFirst()
        return s
    }

    static func number(_ rest: inout ArraySlice<PhraseToken>) -> Int64? {
        guard case .number(let n)? = rest.first else { return nil }
        rest = rest.dropFirst()
        return n
    }

    static func id(_ rest: inout ArraySlice<PhraseToken>) -> String? {
        guard case .id(let s)? = rest.first else { return nil }
        rest = rest.dropFirst()
        return s
    }

    static func label(_ rest: inout ArraySlice<PhraseToken>, ofRight: Bool = false) -> RequestLabel? {
        guard let program = text(&rest), let account = text(&rest) else { return nil }
        guard ofRight else { return RequestLabel(program: program, account: account) }
        return text(&rest).map { RequestLabel(program: program, account: account, right: $0) }
    }

    static func reason(_ rest: inout ArraySlice<PhraseToken>) -> ReaderUnavailable? {
        switch id(&rest) {
        case "noReader": .noReader
        case "lidClosed": .lidClosed
        case "remoteSession": .remoteSession
        case "connectionOrphaned": .connectionOrphaned
        case "requesterUnknown": .requesterUnknown
        case "noLoginSession": .noLoginSession
        case "notTheTargetsSession": text(&rest).map { .notTheTargetsSession($0) }
        case "sessionNotInFront": text(&rest).map { .sessionNotInFront($0) }
        case "readerBusy": .readerBusy(by: nil)
        case "readerBusyBy": label(&rest).map { .readerBusy(by: $0) }
        case "readerBusyByRight": label(&rest, ofRight: true).map { .readerBusy(by: $0) }
        case "readerShareUsed":
            text(&rest).flatMap { account in
                number(&rest).flatMap { share in
                    number(&rest).map { .readerShareUsed(account: account, shareMs: share, retryInMs: $0) }
                }
            }
        default: nil
        }
    }

    /// The identifiers without arguments: built once, not at every phrase (and nested phrase) read.
    /// Pairs searched in order, not a dictionary: a client's first hashed lookup made the runtime
    /// scan every conformance record in the binary, which cost more than 30 comparisons.
    static let simplePhrases: KeyValuePairs<String, Phrase> = [
        "authenticatedWithFinger": .authenticatedWithFinger,
        "authenticatedWithPasscode": .authenticatedWithPasscode,
        "authenticatedByRecentSuccess": .authenticatedByRecentSuccess,
        "policyCanBeEvaluated": .policyCanBeEvaluated, "fingerNotRecognised": .fingerNotRecognised,
        "userChoseFallback": .userChoseFallback, "timedOutWaitingForFinger": .timedOutWaitingForFinger,
        "timedOutWaitingForPasscode": .timedOutWaitingForPasscode, "interactionNotAllowed": .interactionNotAllowed,
        "passcodeNeededButClientCannotAsk": .passcodeNeededButClientCannotAsk,
        "noPasscodeAndNoFinger": .noPasscodeAndNoFinger, "noPasscodeSet": .noPasscodeSet,
        "noFingerEnrolled": .noFingerEnrolled, "fingersOnDisconnectedReader": .fingersOnDisconnectedReader,
        "stateUnreadable": .stateUnreadable, "stateFromNewerVersion": .stateFromNewerVersion,
        "attemptNotRecorded": .attemptNotRecorded, "enterPasscode": .enterPasscode, "wrongPasscode": .wrongPasscode,
        "fallbackUsePasscode": .fallbackUsePasscode, "fallbackEnterPassword": .fallbackEnterPassword,
        "currentPasscodeNeeded": .currentPasscodeNeeded, "currentPasscodeWrong": .currentPasscodeWrong,
        "passcodeNotStored": .passcodeNotStored, "passcodeNotHashed": .passcodeNotHashed,
        "passwordRequiredAfterRestart": .passwordRequired(.restart),
        "passwordRequiredForFirstSession": .passwordRequired(.firstSession),
        "passwordRequiredUseUnknown": .passwordRequired(.useUnknown),
        "passwordUseNotRecordedOrphaned": .passwordUseNotRecorded(.connectionOrphaned),
        "passwordUseNotRecordedRemote": .passwordUseNotRecorded(.remoteSession),
        "passwordUseNotRecordedNoSession": .passwordUseNotRecorded(.noSession),
        "passwordUseNotRecordedNotOwnSession": .passwordUseNotRecorded(.notOwnSession),
        "passwordUseNotRecordedNotActive": .passwordUseNotRecorded(.sessionNotActive),
    ]

    /// The identifier of a phrase without arguments; every phrase `appendTokens` sends by it is in
    /// `simplePhrases` (PhraseWireTests read each back).
    static func simpleName(of phrase: Phrase) -> String {
        guard let name = simplePhrases.first(where: { $0.value == phrase })?.key else {
            preconditionFailure("\(phrase) has no entry in PhraseParser.simplePhrases")
        }
        return name
    }

    static func phrase(_ rest: inout ArraySlice<PhraseToken>, depth: Int) -> Phrase? {
        guard depth < Phrase.maxWireDepth, let name = id(&rest) else { return nil }
        if let p = simplePhrases.first(where: { $0.key == name })?.value { return p }
        let next = depth + 1
        switch name {
        case "cancelled":
            guard let raw = number(&rest), let code = ResultCode(rawValue: raw) else { return nil }
            return .cancelled(code)
        case "timedOutWaitingForTurn": return text(&rest).map { .timedOutWaitingForTurn(user: $0) }
        case "biometryLocked":
            guard let n = number(&rest), n == 0 || n == 1 else { return nil }
            return .biometryLocked(passcodeSet: n == 1)
        case "fingerNotAvailable": return reason(&rest).map { .fingerNotAvailable($0) }
        case "readerFailed": return text(&rest).map { .readerFailed($0) }
        case "placeFinger":
            guard let raw = text(&rest) else { return nil }
            if raw.isEmpty { return .placeFinger(nil) }
            return FingerName(rawValue: raw).map { .placeFinger($0) }
        case "forRequest", "forRightRequest":
            guard let p = phrase(&rest, depth: next), let l = label(&rest, ofRight: name == "forRightRequest")
            else { return nil }
            return .forRequest(p, l)
        case "noMatch":
            guard let n = number(&rest), n >= 0, n <= 1000 else { return nil }
            return .noMatch(triesLeft: Int(n))
        case "passcodeLocked":
            guard let ms = number(&rest), ms >= 0 else { return nil }
            return .passcodeLocked(remainingMs: ms)
        case "retry": return number(&rest).flatMap(RetryHint.init(rawValue:)).map { .retry($0) }
        case "verbatim": return text(&rest).map { .verbatim($0) }
        case "passwordRequiredAfterMaxAge":
            guard let ms = number(&rest), ms >= 0 else { return nil }
            return .passwordRequired(.maxAge(ms: ms))
        case "passwordRequiredIdle":
            guard let p = number(&rest), let f = number(&rest), p >= 0, f >= 0 else { return nil }
            return .passwordRequired(.idle(passwordMs: p, fingerMs: f))
        case "passwordUseNotRecordedSessionClass":
            return text(&rest).map { .passwordUseNotRecorded(.sessionClass($0)) }
        case "prompt":
            guard let reason = text(&rest), let p = phrase(&rest, depth: next), let cancel = text(&rest) else {
                return nil
            }
            return .prompt(reason: reason.isEmpty ? nil : reason, p, cancelTitle: cancel.isEmpty ? nil : cancel)
        case "both":
            guard let a = phrase(&rest, depth: next), let b = phrase(&rest, depth: next) else { return nil }
            return .both(a, b)
        case "passcodeSet": return text(&rest).map { .passcodeSet(user: $0) }
        case "passcodeRemoved": return text(&rest).map { .passcodeRemoved(user: $0) }
        case "noPasscodeToRemove": return text(&rest).map { .noPasscodeToRemove(user: $0) }
        case "catalogued":
            guard let template = text(&rest), let count = number(&rest), (0...Phrase.maxArguments).contains(count)
            else { return nil }
            var arguments: [Phrase] = []
            for _ in 0..<count {
                guard let argument = phrase(&rest, depth: next) else { return nil }
                arguments.append(argument)
            }
            return .catalogued(template, arguments)
        case "fingerName": return text(&rest).flatMap(FingerName.init(rawValue:)).map { .fingerName($0) }
        case "firstPasscodeNeedsFinger":
            guard let user = text(&rest), let because = phrase(&rest, depth: next) else { return nil }
            return .firstPasscodeNeedsFinger(user: user, because: because)
        default: return nil
        }
    }
}
