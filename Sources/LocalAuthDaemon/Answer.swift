// SPDX-License-Identifier: Apache-2.0
// The daemon's one answer to a request, whatever door it came through. Typed: each door says it in
// its own words — the socket door as a RESULT frame (LocalAuthSocketDoor/WireEncoding.swift), the
// fprintd door as fprintd's status names and bus errors (LocalAuthFprintdDoor/FprintdVocabulary.swift).
// No door reads another's wire form.

import LocalAuthCore
import LocalAuthProtocol

/// The answer to one request: the decision (its code, its line as a phrase, what an evaluation
/// found, the reader's failure) and what the request asked for (`Payload`).
public struct Answer: Sendable, Equatable {
    public var decision: Decision
    public var payload: Payload
    /// The line is English only, with nothing a client could say in its own language (the
    /// simulator's lines, an import's summary, a door's own): `decision.phrase` is `.verbatim` of it.
    public var englishOnly: Bool

    /// What a request asked for, beside the decision.
    public enum Payload: Sendable, Equatable {
        case none
        /// `list`: the account's enrolled fingers, each once, in the store's order.
        case fingers([FingerName])
        /// `devices`: each reader present.
        case devices([DeviceInfo])
        /// `status`: the reader, and with an account, its enrolment, lockout, passcode and password rule.
        case status(StatusFacts)
        /// `enroll`: the finger added and the account's domain state with it.
        case enrolled(FingerName, domainState: [UInt8])
        /// `delete`: the account's domain state after the prints went.
        case domainState([UInt8])
        /// `canEvaluate` of a built-in reader the closed lid covers (Apple's `builtInSensorInaccessible`).
        case sensorInaccessible
        /// `rightSave`, `rightGet`: what may be told of a right.
        case right(requirement: RightRequirement, publicKey: [UInt8]?)
        /// `rightUse`: the operation's output.
        case data([UInt8])
    }

    /// `status`'s facts.
    public struct StatusFacts: Sendable, Equatable {
        public var readerPresent: Bool
        public var biometryType: BiometryKind
        /// With an account named (or the caller's own).
        public var account: AccountFacts?
    }

    /// One account's part of `status`.
    public struct AccountFacts: Sendable, Equatable {
        public var enrolledCount: Int
        public var biometryLocked: Bool
        public var passcodeSet: Bool
        /// The "password required" rules (docs/policy.md, rows R), as asked at `askedAtMs` (the
        /// daemon's wall clock): a finger counts until `askedAtMs + forMs` when they give an end.
        public var password: PasswordRequirement
        public var askedAtMs: Int64
    }

    public init(_ decision: Decision, _ payload: Payload = .none) {
        self.decision = decision
        self.payload = payload
        self.englishOnly = false
    }

    public init(_ code: ResultCode, _ phrase: Phrase, _ payload: Payload = .none) {
        self.init(Decision(code, phrase), payload)
    }

    /// A line in English only (`englishOnly`).
    public init(_ code: ResultCode, english line: String) {
        self.init(Decision(code, .verbatim(line)))
        self.englishOnly = true
    }

    public var code: ResultCode { decision.code }
    public var isSuccess: Bool { decision.isSuccess }
    /// The line in English: the audit's and the journal's words, and a bus error's.
    public var english: String { decision.phrase.english }
    /// The phrase a client renders in its own language; nil when the line is English only.
    public var phrase: Phrase? { englishOnly ? nil : decision.phrase }
    public var readerFailure: ReaderFailure? { decision.readerFailure }
}
