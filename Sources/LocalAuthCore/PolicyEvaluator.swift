// SPDX-License-Identifier: Apache-2.0

import LocalAuthProtocol

/// LAContext's `evaluatePolicy` as a pure state machine: no I/O, the clock passed in.
///
/// One evaluator per EVALUATE request. The daemon calls `start`, then `handle` for each input,
/// and executes the outputs in order. Inputs that do not fit the current phase (a scan result
/// after `stopScan`, a PASSCODE before `requestPasscode`, anything after `finish`) are ignored.
/// Every attempt is counted on disk before it is made (`LockoutRules`): a state that cannot be
/// written refuses the attempt.
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
    /// A finger attempt is counted on disk and its scan has not answered yet.
    private var fingerAttemptPending = false
    /// The state before the passcode attempt being checked was counted; nil when none is checked.
    private var passcodeBeforeAttempt: UserAuthState?
    /// Wrong passcodes already counted in this evaluation.
    private var countedWrongTokens: Set<String> = []
    private var deadlineMs: Int64 = 0
    /// A write failed: nothing more is written, and the evaluation ends.
    private var writesFailed = false
    /// The latest batch finished after a write that must succeed: if that write fails, the finish
    /// was never executed, and `.recordFailed` still gets an answer.
    private var finishedAfterWrite = false

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
            finish(Decision(.biometryNotAvailable, .stateUnreadable), into: &out)
            return out
        }
        observe(nowMs)
        let verdict = Self.canEvaluate(policy: options.policy, state: state, facts: facts, config: config, nowMs: nowMs)
        if verdict.isSuccess, reuseApplies(nowMs: nowMs) {
            finish(success(.authenticatedByRecentSuccess, finger: nil), into: &out)
            return out
        }
        if options.flags.contains(.interactionNotAllowed) {
            finish(Decision(.notInteractive, .interactionNotAllowed), into: &out)
            return out
        }
        if LockoutRules.biometryLocked(state, config: config) { state.biometryLocked = true }
        switch options.policy {
        case .deviceOwnerAuthenticationWithBiometrics:
            if let problem = Self.biometryProblem(state: state, facts: facts, config: config) {
                finish(problem, into: &out)
            } else {
                beginScan(into: &out)
            }
        case .deviceOwnerAuthentication:
            if Self.biometryProblem(state: state, facts: facts, config: config) == nil {
                beginScan(into: &out)
            } else if state.passcodeHash == nil {
                finish(Decision(.passcodeNotSet, .noPasscodeAndNoFinger), into: &out)
            } else if !options.flags.contains(.passcodeCapable) {
                finish(Decision(.notInteractive, .passcodeNeededButClientCannotAsk), into: &out)
            } else {
                if state.biometryLocked {
                    reveal(.notify(Notice(.biometryLocked, lockedPhrase)), into: &out)
                } else if let why = facts.readerUnavailable, !facts.enrolledFingers.isEmpty {
                    // Fingers there are, but the reader cannot take them now (busy, the lid): say why.
                    reveal(.notify(Notice(.info, .fingerNotAvailable(why))), into: &out)
                } else if let reason = facts.passwordRequired, !facts.enrolledFingers.isEmpty {
                    reveal(.notify(Notice(.info, .passwordRequired(reason))), into: &out)
                }
                enterPasscode(nowMs: nowMs, into: &out)
            }
        case .devicePasscode:
            // A right's passcode-only requirement: the same passcode rules, no finger.
            if state.passcodeHash == nil {
                finish(Decision(.passcodeNotSet, .noPasscodeSet), into: &out)
            } else if !options.flags.contains(.passcodeCapable) {
                finish(Decision(.notInteractive, .passcodeNeededButClientCannotAsk), into: &out)
            } else {
                enterPasscode(nowMs: nowMs, into: &out)
            }
        }
        flush(into: &out)
        return out
    }

    public mutating func handle(_ input: PolicyInput, nowMs: Int64) -> [PolicyOutput] {
        let active = phase == .scanning || phase == .awaitingPasscode
        guard active || (input == .recordFailed && finishedAfterWrite) else { return [] }
        finishedAfterWrite = false
        observe(nowMs)
        var out: [PolicyOutput] = []
        switch (input, phase) {
        case (.recordFailed, _):
            // The count of this attempt (or the reset after a success) is not on disk: refuse the
            // attempt, whatever the finger or passcode was, and write nothing more.
            writesFailed = true
            if phase == .scanning { out.append(.stopScan) }
            finish(Decision(.biometryNotAvailable, .attemptNotRecorded), into: &out)

        case (.fingerMatched(let finger), .scanning) where fingerAttemptPending:
            fingerAttemptPending = false
            LockoutRules.fingerMatched(&state)
            reveal(.recordUse(.finger), into: &out)
            out.append(.recordSuccess)
            finish(success(.authenticatedWithFinger, finger: finger), into: &out)

        case (.fingerNotMatched, .scanning) where fingerAttemptPending:
            fingerAttemptPending = false
            fingerMissed(nowMs: nowMs, into: &out)

        case (.fingerRetry(let hint), .scanning):
            // A bad swipe is not an answer: the attempt counted ahead goes on, uncounted again.
            reveal(.notify(Notice(.retry, .retry(hint), hint: hint)), into: &out)
            out.append(.scanFinger(scanTarget))

        case (.readerFailed(let why), .scanning):
            readerGone(.readerFailed(why), nowMs: nowMs, into: &out)

        case (.readerWithdrawn(let why), .scanning):
            out.append(.stopScan)
            readerGone(.fingerNotAvailable(why), nowMs: nowMs, into: &out)

        case (.fallbackChosen, .scanning) where fallbackOffered:
            out.append(.stopScan)
            takeBackFingerAttempt(into: &out)
            switch options.policy {
            case .deviceOwnerAuthenticationWithBiometrics, .devicePasscode:
                finish(Decision(.userFallback, .userChoseFallback), into: &out)
            case .deviceOwnerAuthentication:
                enterPasscode(nowMs: nowMs, into: &out)
            }

        case (.passcodeEntered, .awaitingPasscode) where passcodeBeforeAttempt == nil:
            passcodeEntered(nowMs: nowMs, into: &out)

        case (.passcodeChecked(let correct, let token), .awaitingPasscode) where passcodeBeforeAttempt != nil:
            passcodeChecked(correct: correct, token: token, nowMs: nowMs, into: &out)

        case (.cancelled(let code), _):
            if phase == .scanning { out.append(.stopScan) }
            takeBackFingerAttempt(into: &out)
            // A cancel is never a success, whatever the caller passed.
            let code = code == .success ? .systemCancel : code
            finish(Decision(code, .cancelled(code)), into: &out)

        case (.timedOut, _):
            let phrase: Phrase = phase == .scanning ? .timedOutWaitingForFinger : .timedOutWaitingForPasscode
            if phase == .scanning { out.append(.stopScan) }
            takeBackFingerAttempt(into: &out)
            finish(Decision(.systemCancel, phrase), into: &out)

        default:
            break  // Stale or out-of-phase input: ignored, never counted.
        }
        flush(into: &out)
        return out
    }

    // MARK: Queries (no prompt)

    /// canEvaluatePolicy: success, or the reason the policy cannot be evaluated now, with
    /// `biometryType`, the domain state (when fingers are enrolled), and whether biometrics are
    /// locked and a passcode is set.
    public static func canEvaluate(
        policy: PolicyKind, state: UserAuthState, facts: EvaluationFacts, config: LockoutConfig, nowMs: Int64
    ) -> Decision {
        var decision: Decision
        if !facts.stateReadable {
            decision = Decision(.biometryNotAvailable, .stateUnreadable)
        } else {
            let problem = biometryProblem(state: state, facts: facts, config: config)
            switch policy {
            case .deviceOwnerAuthenticationWithBiometrics:
                decision = problem ?? Decision(.success, .policyCanBeEvaluated)
            case .deviceOwnerAuthentication:
                decision =
                    problem == nil || state.passcodeHash != nil
                    ? Decision(.success, .policyCanBeEvaluated) : Decision(.passcodeNotSet, .noPasscodeAndNoFinger)
            case .devicePasscode:
                decision =
                    state.passcodeHash != nil
                    ? Decision(.success, .policyCanBeEvaluated) : Decision(.passcodeNotSet, .noPasscodeSet)
            }
            if !facts.enrolledFingers.isEmpty, !state.domainState.isEmpty { decision.domainState = state.domainState }
        }
        decision.biometryType = biometryType(readerAvailable: facts.readerAvailable)
        decision.biometryLocked = !facts.stateReadable || LockoutRules.biometryLocked(state, config: config)
        decision.passcodeSet = state.passcodeHash != nil
        return decision
    }

    /// `biometryType`: touchID when a fingerprint reader exists.
    public static func biometryType(readerAvailable: Bool) -> BiometryKind {
        readerAvailable ? .touchID : .none
    }

    /// Milliseconds the passcode is still refused at `nowMs` (0: accepted).
    public func passcodeDelayRemainingMs(nowMs: Int64) -> Int64 {
        PasscodeDelay.remainingMs(state: state, nowMs: nowMs)
    }

    // MARK: Steps

    private mutating func fingerMissed(nowMs: Int64, into out: inout [PolicyOutput]) {
        triesUsed += 1
        LockoutRules.fingerMissed(&state, config: config)
        let left = max(min(tries - triesUsed, config.fingerAttempts - state.fingerFailures), 0)
        reveal(.notify(Notice(.noMatch, .noMatch(triesLeft: left), triesLeft: left)), into: &out)
        if state.biometryLocked {
            reveal(.notify(Notice(.biometryLocked, lockedPhrase)), into: &out)
            fingersExhausted(Decision(.biometryLockout, lockedPhrase), nowMs: nowMs, into: &out)
        } else if triesUsed >= tries {
            fingersExhausted(Decision(.authenticationFailed, .fingerNotRecognised), nowMs: nowMs, into: &out)
        } else {
            if !fallbackOffered, fallbackAllowed {
                fallbackOffered = true
                reveal(.notify(Notice(.fallbackAvailable, fallbackTitle)), into: &out)
            }
            scan(into: &out)
            // Fingers tried in turn: say which one the next attempt reads.
            if scanTarget != nil { askForFinger(into: &out) }
        }
    }

    /// The reader is gone for this evaluation: the attempt is given back; policy 2 moves on to the
    /// passcode (saying why) when it can, else the evaluation ends.
    private mutating func readerGone(_ why: Phrase, nowMs: Int64, into out: inout [PolicyOutput]) {
        takeBackFingerAttempt(into: &out)
        if options.policy == .deviceOwnerAuthentication, passcodeUsable {
            reveal(.notify(Notice(.info, why)), into: &out)
            enterPasscode(nowMs: nowMs, into: &out)
        } else {
            finish(Decision(.biometryNotAvailable, why), into: &out)
        }
    }

    /// No more fingers: policy 2 moves on to the passcode when it can, else the evaluation ends.
    private mutating func fingersExhausted(_ failure: Decision, nowMs: Int64, into out: inout [PolicyOutput]) {
        if options.policy == .deviceOwnerAuthentication, passcodeUsable {
            enterPasscode(nowMs: nowMs, into: &out)
        } else {
            finish(failure, into: &out)
        }
    }

    private mutating func passcodeEntered(nowMs: Int64, into out: inout [PolicyOutput]) {
        let remaining = PasscodeDelay.remainingMs(state: state, nowMs: nowMs)
        if remaining > 0 {
            // Refused unchecked and uncounted: the delay is the whole point.
            refuseDuringDelay(remainingMs: remaining, kind: .passcodeWrong, nowMs: nowMs, into: &out)
            askAgain(nowMs: nowMs, into: &out)
            return
        }
        passcodeBeforeAttempt = state
        LockoutRules.passcodeAttemptStarted(&state, config: config)
        flush(into: &out)  // counted on disk before anything is hashed
        out.append(.checkPasscode)
    }

    private mutating func passcodeChecked(correct: Bool, token: String, nowMs: Int64, into out: inout [PolicyOutput]) {
        let before = passcodeBeforeAttempt ?? state
        passcodeBeforeAttempt = nil
        if correct {
            LockoutRules.passcodeAccepted(&state)
            reveal(.recordUse(.passcode), into: &out)
            out.append(.recordSuccess)
            finish(success(.authenticatedWithPasscode, finger: nil), into: &out)
            return
        }
        if countedWrongTokens.contains(token) {
            // The same wrong passcode again counts once: its count is given back.
            LockoutRules.passcodeAttemptTakenBack(&state, to: before)
            flush(ifItFails: .goOn, into: &out)
            reveal(.notify(Notice(.passcodeWrong, .wrongPasscode)), into: &out)
        } else {
            countedWrongTokens.insert(token)
            let delayMs =
                state.passcodeLockedUntilMs > before.passcodeLockedUntilMs ? passcodeDelayRemainingMs(nowMs: nowMs) : 0
            if delayMs > 0 {
                refuseDuringDelay(remainingMs: delayMs, kind: .passcodeWrong, nowMs: nowMs, into: &out)
            } else {
                reveal(.notify(Notice(.passcodeWrong, .wrongPasscode)), into: &out)
            }
        }
        askAgain(nowMs: nowMs, into: &out)
    }

    /// After a wrong passcode the client is asked again explicitly (with the delay, if one runs), so a
    /// client that prompts only on `passcodeNeeded` (the PAM module) never waits for a question that
    /// never comes, nor guesses whether one will.
    private mutating func askAgain(nowMs: Int64, into out: inout [PolicyOutput]) {
        guard phase == .awaitingPasscode else { return }
        enterPasscode(nowMs: nowMs, into: &out)
    }

    /// Tells the client how long the passcode stays locked, and ends the evaluation when the
    /// delay outlasts the request.
    private mutating func refuseDuringDelay(
        remainingMs: Int64, kind: EventKind, nowMs: Int64, into out: inout [PolicyOutput]
    ) {
        let phrase = Phrase.passcodeLocked(remainingMs: remainingMs)
        if remainingMs >= deadlineMs - nowMs {
            if kind == .passcodeWrong { reveal(.notify(Notice(kind, phrase, delayMs: remainingMs)), into: &out) }
            finish(Decision(.authenticationFailed, phrase), into: &out)
        } else {
            reveal(.notify(Notice(kind, phrase, delayMs: remainingMs)), into: &out)
        }
    }

    private mutating func beginScan(into out: inout [PolicyOutput]) {
        phase = .scanning
        scan(into: &out)
        askForFinger(into: &out)
    }

    /// "Place your right index finger …": the one finger this attempt reads, when it reads one;
    /// "Place a finger …" when the reader looks among several.
    private mutating func askForFinger(into out: inout [PolicyOutput]) {
        let named = scanTarget ?? (facts.enrolledFingers.count == 1 ? facts.enrolledFingers[0] : nil)
        let instruction = facts.label.map { Phrase.forRequest(.placeFinger(named), $0) } ?? .placeFinger(named)
        reveal(.notify(Notice(.placeFinger, prompt(instruction), finger: named)), into: &out)
    }

    /// The finger the current attempt verifies: nil when the reader identifies (or one finger is
    /// enrolled); otherwise the enrolled fingers in turn, one an attempt (as fprintd's "any" does,
    /// but each named, so the person knows which finger is asked for).
    private var scanTarget: FingerName? {
        guard !facts.readerCanIdentify, facts.enrolledFingers.count > 1 else { return nil }
        return facts.enrolledFingers[triesUsed % facts.enrolledFingers.count]
    }

    /// The next finger attempt: counted on disk first, then the scan.
    private mutating func scan(into out: inout [PolicyOutput]) {
        LockoutRules.fingerAttemptStarted(&state)
        fingerAttemptPending = true
        flush(into: &out)
        out.append(.scanFinger(scanTarget))
    }

    private mutating func takeBackFingerAttempt(into out: inout [PolicyOutput]) {
        guard fingerAttemptPending else { return }
        fingerAttemptPending = false
        LockoutRules.fingerAttemptTakenBack(&state)
        flush(ifItFails: .goOn, into: &out)
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
            let phrase = Phrase.both(prompt(.enterPasscode), .passcodeLocked(remainingMs: remaining))
            reveal(.notify(Notice(.passcodeNeeded, phrase, delayMs: remaining)), into: &out)
        } else {
            out.append(.requestPasscode)
            reveal(.notify(Notice(.passcodeNeeded, prompt(.enterPasscode))), into: &out)
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

    private mutating func flush(ifItFails: WriteFailure = .refuse, into out: inout [PolicyOutput]) {
        guard facts.stateReadable, !writesFailed else { return }
        var pending = state
        pending.lastSeenMs = persisted.lastSeenMs
        // lastSeenMs alone is not worth a write; it rides along with the next real change.
        guard pending != persisted else { return }
        persisted = state
        out.append(.persist(state, ifItFails: ifItFails))
    }

    private mutating func finish(_ decision: Decision, into out: inout [PolicyOutput]) {
        reveal(.finish(decision), into: &out)
        phase = .finished
        finishedAfterWrite = out.contains { if case .persist(_, .refuse) = $0 { true } else { false } }
    }

    private func reuseApplies(nowMs: Int64) -> Bool {
        let seconds = min(max(options.reuseSeconds, 0), config.maxReuseSeconds, EvaluateOptions.maxReuseSeconds)
        guard seconds > 0, let last = facts.lastSuccessMs, last <= nowMs else { return false }
        return nowMs - last < seconds * 1000
    }

    private func success(_ phrase: Phrase, finger: FingerName?) -> Decision {
        Decision(.success, phrase, domainState: state.domainState.isEmpty ? nil : state.domainState, finger: finger)
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

    private var fallbackTitle: Phrase {
        options.fallbackTitle.map { .verbatim(Echo.truncated($0, maxBytes: Self.maxTitleBytes)) }
            ?? (options.policy == .deviceOwnerAuthentication ? .fallbackUsePasscode : .fallbackEnterPassword)
    }

    private var lockedPhrase: Phrase { .biometryLocked(passcodeSet: state.passcodeHash != nil) }

    /// The most of a caller's reason a prompt repeats, in bytes of UTF-8.
    static let maxReasonBytes = 512
    /// The most of a caller's cancel or fallback title a prompt repeats.
    static let maxTitleBytes = 64

    /// The prompt shown to the person: the caller's reason, the instruction, the cancel title. The
    /// caller's texts are cut (`maxReasonBytes`, `maxTitleBytes`) so that the instruction always
    /// reaches the person and the prompt always fits a frame.
    private func prompt(_ instruction: Phrase) -> Phrase {
        let reason = options.reason.flatMap { $0.isEmpty ? nil : Echo.truncated($0, maxBytes: Self.maxReasonBytes) }
        let cancel = options.cancelTitle.flatMap {
            $0.isEmpty ? nil : Echo.truncated($0, maxBytes: Self.maxTitleBytes)
        }
        return reason == nil && cancel == nil ? instruction : .prompt(reason: reason, instruction, cancelTitle: cancel)
    }

    /// Why biometrics cannot be used now, in Apple's order: no reader, nothing enrolled, lockout;
    /// then the "password required" rules. A user whose fingers are only on a reader that is not
    /// connected is told so first (`biometryDisconnected`, Apple's code for a removable accessory that
    /// is not there), whether or not another reader is.
    static func biometryProblem(state: UserAuthState, facts: EvaluationFacts, config: LockoutConfig) -> Decision? {
        if facts.enrolledOnlyOnAbsentReaders && facts.enrolledFingers.isEmpty {
            return Decision(.biometryDisconnected, .fingersOnDisconnectedReader)
        }
        if let why = facts.readerUnavailable { return Decision(.biometryNotAvailable, .fingerNotAvailable(why)) }
        if facts.enrolledFingers.isEmpty { return Decision(.biometryNotEnrolled, .noFingerEnrolled) }
        if LockoutRules.biometryLocked(state, config: config) {
            return Decision(.biometryLockout, .biometryLocked(passcodeSet: state.passcodeHash != nil))
        }
        // The "password required" rules: Apple answers them with biometryLockout too.
        if let reason = facts.passwordRequired { return Decision(.biometryLockout, .passwordRequired(reason)) }
        return nil
    }
}
