// SPDX-License-Identifier: Apache-2.0

import LocalAuthProtocol

/// What the daemon knows, when an evaluation starts, about the reader and the user.
public struct EvaluationFacts: Sendable, Equatable {
    /// A usable reader is present.
    public var readerAvailable: Bool
    /// Why not, in a few lowercase words: "no fingerprint reader is connected", "the laptop lid is closed".
    public var readerUnavailableReason: String?
    /// fprintd finger names enrolled on the present reader, in enrolment order.
    public var enrolledFingers: [String]
    /// False when the user's stored state is corrupt: the evaluator then fails closed (see docs/policy.md).
    public var stateReadable: Bool
    /// The last successful evaluation in the same (user, service, session) scope, for the reuse window.
    public var lastSuccessMs: Int64?
    /// The user's fingers are enrolled only on readers that are not connected (a USB reader
    /// unplugged), none on a present one; the daemon sets it only when nothing else (a remote
    /// session, a closed lid) already keeps biometrics away.
    public var enrolledOnlyOnAbsentReaders: Bool

    public init(
        readerAvailable: Bool, readerUnavailableReason: String? = nil, enrolledFingers: [String],
        stateReadable: Bool = true, lastSuccessMs: Int64? = nil, enrolledOnlyOnAbsentReaders: Bool = false
    ) {
        self.readerAvailable = readerAvailable
        self.readerUnavailableReason = readerUnavailableReason
        self.enrolledFingers = enrolledFingers
        self.stateReadable = stateReadable
        self.lastSuccessMs = lastSuccessMs
        self.enrolledOnlyOnAbsentReaders = enrolledOnlyOnAbsentReaders
    }
}

/// Something that happened during an evaluation, fed to `PolicyEvaluator.handle`.
public enum PolicyInput: Sendable, Equatable {
    case fingerMatched(finger: String)
    case fingerNotMatched
    /// A bad swipe: not a failure.
    case fingerRetry(RetryHint)
    /// Unplugged, or a libfprint error mid-scan.
    case readerFailed(String)
    /// The client sent FALLBACK.
    case fallbackChosen
    /// The daemon checked the hash; equal tokens mean the same typed passcode.
    case passcodeEntered(correct: Bool, attemptToken: String)
    /// `.userCancel` (CANCEL), `.appCancel` (invalidate), `.systemCancel` (disconnect, shutdown, suspend).
    case cancelled(ResultCode)
    /// The request's `timeoutMs` passed.
    case timedOut
}

/// Something the daemon must do, in the order given.
public enum PolicyOutput: Sendable, Equatable {
    /// Write durably BEFORE executing any later output, so a crash never loses a failure.
    case persist(UserAuthState)
    /// Send to the client.
    case event(Event)
    /// A verify/identify over the enrolled fingers should run now: start one unless one runs.
    case scanFinger
    /// Cancel the running scan.
    case stopScan
    /// From now until `finish`, the daemon accepts PASSCODE frames.
    case requestPasscode
    /// Final; the evaluator accepts no more input.
    case finish(Result)
    /// Record now as the last success for the reuse scope (emitted before `finish` on success).
    case recordSuccess
}

/// LAContext's `evaluatePolicy` as a pure state machine: no I/O, the clock passed in.
///
/// One evaluator per EVALUATE request. The daemon calls `start`, then `handle` for each input,
/// and executes the outputs in order. Inputs that do not fit the current phase (a scan result
/// after `stopScan`, a PASSCODE before `requestPasscode`, anything after `finish`) are ignored.
public struct PolicyEvaluator: Sendable {
    public enum Phase: Sendable, Equatable {
        case idle
        case scanning
        case awaitingPasscode
        case finished
    }

    public let options: EvaluateOptions
    public let facts: EvaluationFacts
    public let config: LockoutConfig
    /// The user's state as it stands after the latest output (persist it when told to).
    public private(set) var state: UserAuthState
    public private(set) var phase: Phase = .idle
    public var isFinished: Bool { phase == .finished }

    /// The state as last persisted (or loaded), to persist only real changes.
    private var persisted: UserAuthState
    private var triesUsed = 0
    private var fallbackOffered = false
    /// Wrong passcodes already counted in this evaluation.
    private var countedWrongTokens: Set<String> = []
    private var deadlineMs: Int64 = 0

    public init(options: EvaluateOptions, state: UserAuthState, facts: EvaluationFacts, config: LockoutConfig) {
        self.options = options
        self.state = state
        self.persisted = state
        self.facts = facts
        self.config = config
    }

    // MARK: Driving

    public mutating func start(nowMs: Int64) -> [PolicyOutput] {
        guard phase == .idle else { return [] }
        var out: [PolicyOutput] = []
        deadlineMs = nowMs.addingReportingOverflow(max(options.timeoutMs, 1)).partialValue
        // Fail closed: a corrupt state must never read as "no lockout", nor be overwritten.
        guard facts.stateReadable else {
            finish(Result(.biometryNotAvailable, PolicyMessages.stateUnreadable), into: &out)
            return out
        }
        observe(nowMs)
        let verdict = Self.canEvaluate(policy: options.policy, state: state, facts: facts, config: config, nowMs: nowMs)
        if verdict.isSuccess, reuseApplies(nowMs: nowMs) {
            finish(Result(.success, PolicyMessages.reused, extra: successExtra(finger: nil)), into: &out)
            return out
        }
        if options.flags.contains(.interactionNotAllowed) {
            finish(Result(.notInteractive, PolicyMessages.notInteractive), into: &out)
            return out
        }
        switch options.policy {
        case .deviceOwnerAuthenticationWithBiometrics:
            if let problem = Self.biometryProblem(state: state, facts: facts) {
                finish(problem, into: &out)
            } else {
                beginScan(into: &out)
            }
        case .deviceOwnerAuthentication:
            if Self.biometryProblem(state: state, facts: facts) == nil {
                beginScan(into: &out)
            } else if state.passcodeHash == nil {
                finish(Result(.passcodeNotSet, PolicyMessages.passcodeNotSet), into: &out)
            } else if !options.flags.contains(.passcodeCapable) {
                finish(Result(.notInteractive, PolicyMessages.passcodeNotAnswerable), into: &out)
            } else {
                if state.biometryLocked { reveal(.event(Event(.biometryLocked, lockedMessage)), into: &out) }
                enterPasscode(nowMs: nowMs, into: &out)
            }
        case .devicePasscode:
            // A right's passcode-only requirement: the same passcode rules, no finger.
            if state.passcodeHash == nil {
                finish(Result(.passcodeNotSet, PolicyMessages.passcodeOnlyNotSet), into: &out)
            } else if !options.flags.contains(.passcodeCapable) {
                finish(Result(.notInteractive, PolicyMessages.passcodeNotAnswerable), into: &out)
            } else {
                enterPasscode(nowMs: nowMs, into: &out)
            }
        }
        flush(into: &out)
        return out
    }

    public mutating func handle(_ input: PolicyInput, nowMs: Int64) -> [PolicyOutput] {
        guard phase == .scanning || phase == .awaitingPasscode else { return [] }
        observe(nowMs)
        var out: [PolicyOutput] = []
        switch (input, phase) {
        case (.fingerMatched(let finger), .scanning):
            state.fingerFailures = 0
            reveal(.recordSuccess, into: &out)
            finish(Result(.success, PolicyMessages.fingerSuccess, extra: successExtra(finger: finger)), into: &out)

        case (.fingerNotMatched, .scanning):
            fingerMissed(nowMs: nowMs, into: &out)

        case (.fingerRetry(let hint), .scanning):
            reveal(.event(Event(.retry, hint.message, hint: hint)), into: &out)
            out.append(.scanFinger)

        case (.readerFailed(let why), .scanning):
            let message = PolicyMessages.readerFailed(why)
            if options.policy == .deviceOwnerAuthentication, passcodeUsable {
                reveal(.event(Event(.info, message)), into: &out)
                enterPasscode(nowMs: nowMs, into: &out)
            } else {
                finish(Result(.biometryNotAvailable, message), into: &out)
            }

        case (.fallbackChosen, .scanning) where fallbackOffered:
            out.append(.stopScan)
            switch options.policy {
            case .deviceOwnerAuthenticationWithBiometrics, .devicePasscode:
                finish(Result(.userFallback, PolicyMessages.fallbackChosen), into: &out)
            case .deviceOwnerAuthentication:
                enterPasscode(nowMs: nowMs, into: &out)
            }

        case (.passcodeEntered(let correct, let token), .awaitingPasscode):
            passcodeEntered(correct: correct, token: token, nowMs: nowMs, into: &out)

        case (.cancelled(let code), _):
            if phase == .scanning { out.append(.stopScan) }
            // A cancel is never a success, whatever the caller passed.
            let code = code == .success ? .systemCancel : code
            finish(Result(code, PolicyMessages.cancelled(code)), into: &out)

        case (.timedOut, _):
            let message = phase == .scanning ? PolicyMessages.timedOutFinger : PolicyMessages.timedOutPasscode
            if phase == .scanning { out.append(.stopScan) }
            finish(Result(.systemCancel, message), into: &out)

        default:
            break  // Stale or out-of-phase input: ignored, never counted.
        }
        flush(into: &out)
        return out
    }

    // MARK: Queries (no prompt)

    /// canEvaluatePolicy: success, or the reason the policy cannot be evaluated now. The result
    /// carries `biometryType` and, when fingers are enrolled, `domainState`; the daemon adds
    /// `biometryLocked` and `passcodeSet` (each tag once: a repeated one is malformed).
    public static func canEvaluate(
        policy: PolicyKind, state: UserAuthState, facts: EvaluationFacts, config: LockoutConfig, nowMs: Int64
    ) -> Result {
        var extra = Frame(.result)
        extra.append(.biometryType, int: biometryType(readerAvailable: facts.readerAvailable).rawValue)
        guard facts.stateReadable else {
            return Result(.biometryNotAvailable, PolicyMessages.stateUnreadable, extra: extra.fields)
        }
        if !facts.enrolledFingers.isEmpty, !state.domainState.isEmpty {
            extra.append(.domainState, bytes: state.domainState)
        }
        let problem = biometryProblem(state: state, facts: facts)
        let result: Result =
            switch policy {
            case .deviceOwnerAuthenticationWithBiometrics:
                problem ?? Result(.success, PolicyMessages.canEvaluate)
            case .deviceOwnerAuthentication:
                problem == nil || state.passcodeHash != nil
                    ? Result(.success, PolicyMessages.canEvaluate)
                    : Result(.passcodeNotSet, PolicyMessages.passcodeNotSet)
            case .devicePasscode:
                state.passcodeHash != nil
                    ? Result(.success, PolicyMessages.canEvaluate)
                    : Result(.passcodeNotSet, PolicyMessages.passcodeOnlyNotSet)
            }
        return Result(result.resultCode ?? .internalError, result.message, extra: extra.fields)
    }

    /// `biometryType`: touchID when a fingerprint reader exists.
    public static func biometryType(readerAvailable: Bool) -> BiometryKind {
        readerAvailable ? .touchID : .none
    }

    /// Milliseconds the passcode is still refused at `nowMs` (0: accepted). The daemon may skip
    /// hashing a PASSCODE while this is positive: the evaluator refuses it anyway.
    public func passcodeDelayRemainingMs(nowMs: Int64) -> Int64 {
        PasscodeDelay.remainingMs(state: state, nowMs: nowMs)
    }

    // MARK: Steps

    private mutating func fingerMissed(nowMs: Int64, into out: inout [PolicyOutput]) {
        triesUsed += 1
        state.fingerFailures += 1
        if state.fingerFailures >= config.fingerAttempts { state.biometryLocked = true }
        let left = max(min(tries - triesUsed, config.fingerAttempts - state.fingerFailures), 0)
        reveal(.event(Event(.noMatch, PolicyMessages.noMatch(triesLeft: left), triesLeft: Int64(left))), into: &out)
        if state.biometryLocked {
            reveal(.event(Event(.biometryLocked, lockedMessage)), into: &out)
            fingersExhausted(Result(.biometryLockout, lockedMessage), nowMs: nowMs, into: &out)
        } else if triesUsed >= tries {
            fingersExhausted(Result(.authenticationFailed, PolicyMessages.fingerFailed), nowMs: nowMs, into: &out)
        } else {
            if !fallbackOffered, fallbackAllowed {
                fallbackOffered = true
                reveal(.event(Event(.fallbackAvailable, fallbackTitle)), into: &out)
            }
            out.append(.scanFinger)
        }
    }

    /// No more fingers: policy 2 moves on to the passcode when it can, else the evaluation ends.
    private mutating func fingersExhausted(_ failure: Result, nowMs: Int64, into out: inout [PolicyOutput]) {
        if options.policy == .deviceOwnerAuthentication, passcodeUsable {
            enterPasscode(nowMs: nowMs, into: &out)
        } else {
            finish(failure, into: &out)
        }
    }

    private mutating func passcodeEntered(correct: Bool, token: String, nowMs: Int64, into out: inout [PolicyOutput]) {
        let remaining = PasscodeDelay.remainingMs(state: state, nowMs: nowMs)
        if remaining > 0 {
            // Refused unchecked and uncounted: the delay is the whole point.
            refuseDuringDelay(remainingMs: remaining, kind: .passcodeWrong, nowMs: nowMs, into: &out)
        } else if correct {
            state.fingerFailures = 0
            state.biometryLocked = false
            state.passcodeFailures = 0
            state.passcodeLockedUntilMs = 0
            reveal(.recordSuccess, into: &out)
            finish(Result(.success, PolicyMessages.passcodeSuccess, extra: successExtra(finger: nil)), into: &out)
        } else if countedWrongTokens.contains(token) {
            reveal(.event(Event(.passcodeWrong, PolicyMessages.passcodeWrong)), into: &out)
        } else {
            countedWrongTokens.insert(token)
            state.passcodeFailures += 1
            let delayMs = PasscodeDelay.schedule(failures: state.passcodeFailures, config: config) * 1000
            if delayMs > 0 {
                state.passcodeLockedUntilMs = state.lastSeenMs + delayMs
                refuseDuringDelay(remainingMs: delayMs, kind: .passcodeWrong, nowMs: nowMs, into: &out)
            } else {
                reveal(.event(Event(.passcodeWrong, PolicyMessages.passcodeWrong)), into: &out)
            }
        }
    }

    /// Tells the client how long the passcode stays locked, and ends the evaluation when the
    /// delay outlasts the request.
    private mutating func refuseDuringDelay(
        remainingMs: Int64, kind: EventKind, nowMs: Int64, into out: inout [PolicyOutput]
    ) {
        let message = PolicyMessages.passcodeLocked(remainingMs: remainingMs)
        if remainingMs >= deadlineMs - nowMs {
            if kind == .passcodeWrong { reveal(.event(Event(kind, message, delayMs: remainingMs)), into: &out) }
            finish(Result(.authenticationFailed, message), into: &out)
        } else {
            reveal(.event(Event(kind, message, delayMs: remainingMs)), into: &out)
        }
    }

    private mutating func beginScan(into out: inout [PolicyOutput]) {
        phase = .scanning
        let single = facts.enrolledFingers.count == 1 ? facts.enrolledFingers[0] : nil
        out.append(.scanFinger)
        reveal(.event(Event(.placeFinger, prompt(PolicyMessages.placeFinger(single)), finger: single)), into: &out)
    }

    private mutating func enterPasscode(nowMs: Int64, into out: inout [PolicyOutput]) {
        phase = .awaitingPasscode
        let remaining = PasscodeDelay.remainingMs(state: state, nowMs: nowMs)
        if remaining > 0 {
            if remaining >= deadlineMs - nowMs {
                refuseDuringDelay(remainingMs: remaining, kind: .passcodeNeeded, nowMs: nowMs, into: &out)
                return
            }
            out.append(.requestPasscode)
            let message =
                "\(prompt(PolicyMessages.enterPasscode)) — \(PolicyMessages.passcodeLocked(remainingMs: remaining))"
            reveal(.event(Event(.passcodeNeeded, message, delayMs: remaining)), into: &out)
        } else {
            out.append(.requestPasscode)
            reveal(.event(Event(.passcodeNeeded, prompt(PolicyMessages.enterPasscode))), into: &out)
        }
    }

    // MARK: Plumbing

    /// A clock set backwards never moves `lastSeenMs` back, so delays measured from it never shrink.
    private mutating func observe(_ nowMs: Int64) {
        state.lastSeenMs = max(state.lastSeenMs, nowMs)
    }

    /// Persist-before-reveal: any pending change is persisted before the output that reveals it.
    private mutating func reveal(_ output: PolicyOutput, into out: inout [PolicyOutput]) {
        flush(into: &out)
        out.append(output)
    }

    private mutating func flush(into out: inout [PolicyOutput]) {
        guard facts.stateReadable else { return }
        var pending = state
        pending.lastSeenMs = persisted.lastSeenMs
        // lastSeenMs alone is not worth a write; it rides along with the next real change.
        guard pending != persisted else { return }
        persisted = state
        out.append(.persist(state))
    }

    private mutating func finish(_ result: Result, into out: inout [PolicyOutput]) {
        reveal(.finish(result), into: &out)
        phase = .finished
    }

    private func reuseApplies(nowMs: Int64) -> Bool {
        let seconds = min(max(options.reuseSeconds, 0), config.maxReuseSeconds, EvaluateOptions.maxReuseSeconds)
        guard seconds > 0, let last = facts.lastSuccessMs, last <= nowMs else { return false }
        return nowMs - last < seconds * 1000
    }

    private func successExtra(finger: String?) -> [Field] {
        var f = Frame(.result)
        if !state.domainState.isEmpty { f.append(.domainState, bytes: state.domainState) }
        f.append(.finger, optionalString: finger)
        return f.fields
    }

    private var tries: Int { Int(min(max(options.tries, 1), EvaluateOptions.maxTries)) }

    private var passcodeUsable: Bool {
        state.passcodeHash != nil && options.flags.contains(.passcodeCapable)
    }

    /// Hidden with an empty title; under policy 2 only offered when there is a passcode to fall back to.
    private var fallbackAllowed: Bool {
        guard options.fallbackTitle != "" else { return false }
        return options.policy == .deviceOwnerAuthenticationWithBiometrics || passcodeUsable
    }

    private var fallbackTitle: String {
        options.fallbackTitle.map { Echo.truncated($0, maxBytes: PolicyMessages.maxTitleBytes) }
            ?? (options.policy == .deviceOwnerAuthentication
                ? PolicyMessages.usePasscode : PolicyMessages.enterPassword)
    }

    private var lockedMessage: String {
        PolicyMessages.biometryLocked(passcodeSet: state.passcodeHash != nil)
    }

    /// The prompt shown to the person: the caller's reason, the instruction, the cancel title.
    /// The caller's texts are cut (`PolicyMessages.maxReasonBytes`, `maxTitleBytes`) so that the
    /// instruction always reaches the person and the prompt always fits a frame.
    private func prompt(_ instruction: String) -> String {
        var text = instruction
        if let reason = options.reason, !reason.isEmpty {
            text = "\(Echo.truncated(reason, maxBytes: PolicyMessages.maxReasonBytes)): \(text)"
        }
        if let cancel = options.cancelTitle, !cancel.isEmpty {
            text += " [\(Echo.truncated(cancel, maxBytes: PolicyMessages.maxTitleBytes))]"
        }
        return text
    }

    /// Why biometrics cannot be used now, in Apple's order: no reader, nothing enrolled, lockout. A
    /// user whose fingers are only on a reader that is not connected is told so (`biometryDisconnected`,
    /// Apple's code for a removable accessory that is not there), whether or not another reader is.
    static func biometryProblem(state: UserAuthState, facts: EvaluationFacts) -> Result? {
        if facts.enrolledOnlyOnAbsentReaders && facts.enrolledFingers.isEmpty {
            return Result(.biometryDisconnected, PolicyMessages.disconnected)
        }
        if !facts.readerAvailable {
            return Result(.biometryNotAvailable, PolicyMessages.notAvailable(facts.readerUnavailableReason))
        }
        if facts.enrolledFingers.isEmpty { return Result(.biometryNotEnrolled, PolicyMessages.notEnrolled) }
        if state.biometryLocked {
            return Result(.biometryLockout, PolicyMessages.biometryLocked(passcodeSet: state.passcodeHash != nil))
        }
        return nil
    }
}

/// Every human line the evaluator produces, in one place.
enum PolicyMessages {
    /// The most of a caller's reason a prompt repeats, in bytes of UTF-8.
    static let maxReasonBytes = 512
    /// The most of a caller's cancel or fallback title a prompt repeats.
    static let maxTitleBytes = 64
    static let stateUnreadable = "Stored authentication state is unreadable; ask an administrator"
    static let disconnected = "The fingerprint reader your fingers are enrolled on is not connected"
    static let reused = "Authenticated by a recent success"
    static let notInteractive = "Interaction is not allowed"
    static let passcodeNotAnswerable = "A passcode is needed but this client cannot ask for one"
    static let passcodeNotSet = "No passcode is set and no fingerprint can be used"
    static let passcodeOnlyNotSet = "No passcode is set"
    static let canEvaluate = "The policy can be evaluated"
    static let fingerSuccess = "Authenticated with fingerprint"
    static let passcodeSuccess = "Authenticated with passcode"
    static let fingerFailed = "Fingerprint not recognised"
    static let fallbackChosen = "The user chose the fallback"
    static let passcodeWrong = "Wrong passcode"
    static let enterPasscode = "Enter your passcode"
    static let usePasscode = "Use passcode"
    static let enterPassword = "Enter password"
    static let notEnrolled = "No fingerprint is enrolled for this user"
    static let timedOutFinger = "Timed out waiting for a fingerprint"
    static let timedOutPasscode = "Timed out waiting for the passcode"

    static func placeFinger(_ finger: String?) -> String {
        guard let finger else { return "Place a finger on the fingerprint reader" }
        let spoken = FingerName(rawValue: finger)?.spoken ?? finger
        return "Place your \(spoken) on the fingerprint reader"
    }

    static func noMatch(triesLeft: Int) -> String {
        switch triesLeft {
        case 0: "Fingerprint not recognised"
        case 1: "Fingerprint not recognised (1 try left)"
        default: "Fingerprint not recognised (\(triesLeft) tries left)"
        }
    }

    static func biometryLocked(passcodeSet: Bool) -> String {
        passcodeSet
            ? "Fingerprint locked after too many attempts — use your passcode"
            : "Fingerprint locked after too many attempts"
    }

    static func notAvailable(_ reason: String?) -> String {
        "Fingerprint not available: \(reason ?? "no fingerprint reader is connected")"
    }

    static func readerFailed(_ why: String) -> String { "Fingerprint reader failed: \(why)" }

    static func passcodeLocked(remainingMs: Int64) -> String {
        "Passcode locked; try again in \(PasscodeDelay.describe(ms: remainingMs))"
    }

    static func cancelled(_ code: ResultCode) -> String {
        switch code {
        case .userCancel: "Cancelled by the user"
        case .appCancel: "Cancelled by the application"
        case .systemCancel: "Cancelled by the system"
        default: "Cancelled"
        }
    }
}
