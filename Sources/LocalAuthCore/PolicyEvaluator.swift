// SPDX-License-Identifier: Apache-2.0

import LocalAuthProtocol

/// LAContext's `evaluatePolicy` as a pure state machine: no I/O, the clock passed in.
///
/// One evaluator per EVALUATE request. The daemon calls `start`, then `handle` for each input,
/// and executes the outputs in order. Inputs that do not fit the current phase (a scan result
/// after `stopScan`, a PASSCODE before `requestPasscode`, anything after `finish`) are ignored.
/// Every attempt is counted on disk before anything is learnt from it (`LockoutRules`): a finger
/// when the reader reports it (or at the latest with the scan's answer), a passcode before its
/// hash. A state that cannot be written refuses the attempt.
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
    public internal(set) var state: UserAuthState
    public internal(set) var phase: Phase = .idle
    public var isFinished: Bool { phase == .finished }

    /// The state as last persisted (or loaded), to persist only real changes.
    var persisted: UserAuthState
    var triesUsed = 0
    var fallbackOffered = false
    /// A scan was asked for and has not answered yet.
    var scanOpen = false
    /// The open scan's touch is counted on disk (the reader reported a finger) and its answer has
    /// not come yet.
    var fingerAttemptPending = false
    /// The state before the passcode attempt being checked was counted; nil when none is checked.
    var passcodeBeforeAttempt: UserAuthState?
    /// Wrong passcodes already counted in this evaluation.
    var countedWrongTokens: Set<String> = []
    var deadlineMs: Int64 = 0
    /// A write failed: nothing more is written, and the evaluation ends.
    var writesFailed = false
    /// The latest batch finished after a write that must succeed: if that write fails, the finish
    /// was never executed, and `.recordFailed` still gets an answer.
    var finishedAfterWrite = false

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
            finish(Decision(.biometryNotAvailable, Self.unreadableState(facts)), into: &out)
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

        case (.fingerPresent, .scanning) where scanOpen:
            countTouch(into: &out)

        case (.fingerMatched(let finger), .scanning) where scanOpen:
            scanOpen = false
            fingerAttemptPending = false
            LockoutRules.fingerMatched(&state)
            reveal(.recordUse(.finger), into: &out)
            out.append(.recordSuccess)
            finish(success(.authenticatedWithFinger, finger: finger), into: &out)

        case (.fingerNotMatched, .scanning) where scanOpen:
            scanOpen = false
            // A touch the reader did not report is counted now, before the miss is told.
            if !fingerAttemptPending { LockoutRules.fingerAttemptStarted(&state) }
            fingerAttemptPending = false
            fingerMissed(nowMs: nowMs, into: &out)

        case (.fingerRetry(let hint), .scanning):
            // A bad swipe is not an answer: a touch already counted goes on, not counted again.
            reveal(.notify(Notice(.retry, .retry(hint), hint: hint)), into: &out)
            out.append(.scanFinger(scanTarget))

        case (.readerFailed(let failure), .scanning):
            readerGone(.readerFailed(failure.english), failure: failure, nowMs: nowMs, into: &out)

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

    /// Why an unreadable state is refused, as the person is told it.
    static func unreadableState(_ facts: EvaluationFacts) -> Phrase {
        facts.stateFromNewerVersion ? .stateFromNewerVersion : .stateUnreadable
    }

    /// canEvaluatePolicy: success, or the reason the policy cannot be evaluated now, with
    /// `biometryType`, the domain state (when fingers are enrolled), and whether biometrics are
    /// locked and a passcode is set.
    public static func canEvaluate(
        policy: PolicyKind, state: UserAuthState, facts: EvaluationFacts, config: LockoutConfig, nowMs: Int64
    ) -> Decision {
        var decision: Decision
        if !facts.stateReadable {
            decision = Decision(.biometryNotAvailable, unreadableState(facts))
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
}
