// SPDX-License-Identifier: Apache-2.0
// What the policy evaluator reads, is fed and answers: typed values, no wire frames. The daemon
// encodes a `Notice` and a `Decision` into frames once, at its edge.

import LocalAuthProtocol

/// What the daemon knows, when an evaluation starts, about the reader and the user.
public struct EvaluationFacts: Sendable, Equatable {
    /// Why biometrics cannot be used for this request; nil when a usable reader is there.
    public var readerUnavailable: ReaderUnavailable?
    /// The fingers enrolled on the present reader, in enrolment order.
    public var enrolledFingers: [FingerName]
    /// False when the user's stored state is corrupt: the evaluator then fails closed (see docs/policy.md).
    public var stateReadable: Bool
    /// With `stateReadable` false: the state is a newer localauthd's (a downgrade), not damage. It
    /// fails closed the same way; only what the person is told differs.
    public var stateFromNewerVersion = false
    /// The last successful evaluation in the same (user, service, session) scope, for the reuse window.
    public var lastSuccessMs: Int64?
    /// The reader can identify (look for the finger among several prints); without it each attempt
    /// verifies one finger, the enrolled fingers in turn, and the prompt names it.
    public var readerCanIdentify: Bool
    /// Whose request this is (the calling program and the account): the finger prompt names it, so
    /// the person at the reader sees whose request a touch answers.
    public var label: RequestLabel?
    /// Why the password is required instead of a finger now (`PasswordRule`); nil: it is not.
    public var passwordRequired: PasswordRequiredReason?
    /// The user's fingers are enrolled only on readers that are not connected (a USB reader
    /// unplugged), none on a present one; the daemon sets it only when nothing else (a remote
    /// session, a closed lid) already keeps biometrics away.
    public var enrolledOnlyOnAbsentReaders: Bool

    public init(
        readerUnavailable: ReaderUnavailable? = nil, enrolledFingers: [FingerName], stateReadable: Bool = true,
        lastSuccessMs: Int64? = nil, label: RequestLabel? = nil, readerCanIdentify: Bool = true,
        enrolledOnlyOnAbsentReaders: Bool = false
    ) {
        self.enrolledOnlyOnAbsentReaders = enrolledOnlyOnAbsentReaders
        self.readerCanIdentify = readerCanIdentify
        self.readerUnavailable = readerUnavailable
        self.enrolledFingers = enrolledFingers
        self.stateReadable = stateReadable
        self.lastSuccessMs = lastSuccessMs
        self.label = label
    }

    public var readerAvailable: Bool { readerUnavailable == nil }

    /// The same facts with the "password required" rules' answer.
    public func with(passwordRequired reason: PasswordRequiredReason?) -> EvaluationFacts {
        var facts = self
        facts.passwordRequired = reason
        return facts
    }
}

/// Something that happened during an evaluation, fed to `PolicyEvaluator.handle`.
public enum PolicyInput: Sendable, Equatable {
    /// The reader reports a finger on the sensor (libfprint's finger-present status), before its
    /// capture and match end: the attempt is counted on disk now.
    case fingerPresent
    case fingerMatched(finger: FingerName)
    case fingerNotMatched
    /// A bad swipe: not a failure.
    case fingerRetry(RetryHint)
    /// Unplugged, or a libfprint error mid-scan.
    case readerFailed(ReaderFailure)
    /// The reader was taken from this evaluation mid-scan (its account used up its share).
    case readerWithdrawn(ReaderUnavailable)
    /// The client sent FALLBACK.
    case fallbackChosen
    /// The client sent PASSCODE: nothing is hashed before the evaluator has counted the attempt
    /// (it answers `.checkPasscode` once that count is durable).
    case passcodeEntered
    /// The daemon checked the hash it was told to check; equal tokens mean the same typed passcode.
    case passcodeChecked(correct: Bool, attemptToken: String)
    /// A `.persist` whose `ifItFails` is `.refuse` could not be written: the daemon executed nothing after it.
    case recordFailed
    /// `.userCancel` (CANCEL), `.appCancel` (invalidate), `.systemCancel` (disconnect, shutdown, suspend).
    case cancelled(ResultCode)
    /// The request's `timeoutMs` passed.
    case timedOut
}

/// What the daemon does when a `.persist` cannot be written.
public enum WriteFailure: Sendable, Equatable {
    /// Execute nothing after it and feed `.recordFailed`: what follows depends on the write.
    case refuse
    /// Go on: a write that lowers a count (a cancelled attempt given back); the count stays, which is
    /// the safe direction.
    case goOn
}

/// Something the daemon must do, in the order given.
public enum PolicyOutput: Sendable, Equatable {
    /// Write durably BEFORE executing any later output, so a crash never loses a failure.
    case persist(UserAuthState, ifItFails: WriteFailure)
    /// Tell the client (an EVENT).
    case notify(Notice)
    /// A verify/identify over the enrolled fingers should run now: start one unless one runs.
    /// `nil`: any enrolled finger (identify, or the only one); a finger: verify that one alone (a
    /// reader that cannot identify, the fingers tried in turn).
    case scanFinger(FingerName?)
    /// Cancel the running scan.
    case stopScan
    /// From now until `finish`, the daemon accepts one PASSCODE per `passcodeNeeded`.
    case requestPasscode
    /// Hash the passcode the client typed (the attempt is counted on disk already) and feed
    /// `.passcodeChecked`.
    case checkPasscode
    /// Final; the evaluator accepts no more input.
    case finish(Decision)
    /// Record now as the last success for the reuse scope (emitted before `finish` on success).
    case recordSuccess
    /// Record that a finger, or the passcode (it counts as the password), proved the user now, for
    /// the "password required" rules (`PasswordRule`); emitted before `recordSuccess`. A write that
    /// fails only makes the rules stricter: the daemon goes on.
    case recordUse(ProofKind)
}

/// What proved the user, for the "password required" rules.
public enum ProofKind: Sendable, Equatable {
    case finger
    case passcode
}

/// An event for the client, typed: its kind, what to say, and the fields of that kind.
public struct Notice: Sendable, Equatable {
    public var kind: EventKind
    public var phrase: Phrase
    public var finger: FingerName?
    public var triesLeft: Int?
    public var delayMs: Int64?
    public var hint: RetryHint?

    public init(
        _ kind: EventKind, _ phrase: Phrase, finger: FingerName? = nil, triesLeft: Int? = nil, delayMs: Int64? = nil,
        hint: RetryHint? = nil
    ) {
        self.kind = kind
        self.phrase = phrase
        self.finger = finger
        self.triesLeft = triesLeft
        self.delayMs = delayMs
        self.hint = hint
    }
}

/// The answer to a request, typed: a code, what to say, and what the client learns with it.
public struct Decision: Sendable, Equatable {
    public var code: ResultCode
    public var phrase: Phrase
    /// `evaluatedPolicyDomainState`, when the user has enrolled fingers.
    public var domainState: [UInt8]?
    /// The finger that matched.
    public var finger: FingerName?
    /// canEvaluate: `biometryType`, whether biometrics are locked, whether a passcode is set.
    public var biometryType: BiometryKind?
    public var biometryLocked: Bool?
    public var passcodeSet: Bool?
    /// The reader's failure that ended the evaluation.
    public var readerFailure: ReaderFailure?

    public init(
        _ code: ResultCode, _ phrase: Phrase, domainState: [UInt8]? = nil, finger: FingerName? = nil,
        biometryType: BiometryKind? = nil, biometryLocked: Bool? = nil, passcodeSet: Bool? = nil,
        readerFailure: ReaderFailure? = nil
    ) {
        self.code = code
        self.phrase = phrase
        self.domainState = domainState
        self.finger = finger
        self.biometryType = biometryType
        self.biometryLocked = biometryLocked
        self.passcodeSet = passcodeSet
        self.readerFailure = readerFailure
    }

    public var isSuccess: Bool { code == .success }
}
