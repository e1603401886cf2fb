// SPDX-License-Identifier: Apache-2.0

import LocalAuthProtocol

/// `PolicyEvaluator`'s steps: what each input does to the evaluation (a finger missed, a passcode
/// checked, the reader gone), and the plumbing that keeps persist-before-reveal. `start` and
/// `handle` (PolicyEvaluator.swift) call them.
extension PolicyEvaluator {
    // MARK: Steps

    mutating func fingerMissed(nowMs: Int64, into out: inout [PolicyOutput]) {
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
    mutating func readerGone(
        _ why: Phrase, failure: ReaderFailure? = nil, nowMs: Int64, into out: inout [PolicyOutput]
    ) {
        takeBackFingerAttempt(into: &out)
        if options.policy == .deviceOwnerAuthentication, passcodeUsable {
            reveal(.notify(Notice(.info, why)), into: &out)
            enterPasscode(nowMs: nowMs, into: &out)
        } else {
            finish(Decision(.biometryNotAvailable, why, readerFailure: failure), into: &out)
        }
    }

    /// No more fingers: policy 2 moves on to the passcode when it can, else the evaluation ends.
    mutating func fingersExhausted(_ failure: Decision, nowMs: Int64, into out: inout [PolicyOutput]) {
        if options.policy == .deviceOwnerAuthentication, passcodeUsable {
            enterPasscode(nowMs: nowMs, into: &out)
        } else {
            finish(failure, into: &out)
        }
    }

    mutating func passcodeEntered(nowMs: Int64, into out: inout [PolicyOutput]) {
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

    mutating func passcodeChecked(correct: Bool, token: String, nowMs: Int64, into out: inout [PolicyOutput]) {
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
    mutating func askAgain(nowMs: Int64, into out: inout [PolicyOutput]) {
        guard phase == .awaitingPasscode else { return }
        enterPasscode(nowMs: nowMs, into: &out)
    }

    /// Tells the client how long the passcode stays locked, and ends the evaluation when the
    /// delay outlasts the request.
    mutating func refuseDuringDelay(
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

    mutating func beginScan(into out: inout [PolicyOutput]) {
        phase = .scanning
        scan(into: &out)
        askForFinger(into: &out)
    }

    /// "Place your right index finger …": the one finger this attempt reads, when it reads one;
    /// "Place a finger …" when the reader looks among several.
    mutating func askForFinger(into out: inout [PolicyOutput]) {
        let named = scanTarget ?? (facts.enrolledFingers.count == 1 ? facts.enrolledFingers[0] : nil)
        let instruction = facts.label.map { Phrase.forRequest(.placeFinger(named), $0) } ?? .placeFinger(named)
        reveal(.notify(Notice(.placeFinger, prompt(instruction), finger: named)), into: &out)
    }

    /// The finger the current attempt verifies: nil when the reader identifies (or one finger is
    /// enrolled); otherwise the enrolled fingers in turn, one an attempt (as fprintd's "any" does,
    /// but each named, so the person knows which finger is asked for).
    var scanTarget: FingerName? {
        guard !facts.readerCanIdentify, facts.enrolledFingers.count > 1 else { return nil }
        return facts.enrolledFingers[triesUsed % facts.enrolledFingers.count]
    }

    /// The next finger attempt: the scan, with nothing counted until a finger touches (ADR 0008):
    /// a wait that ends without a touch (a cancel, a timeout, a crash) leaves no count behind.
    mutating func scan(into out: inout [PolicyOutput]) {
        scanOpen = true
        out.append(.scanFinger(scanTarget))
    }

    /// The reader reports a finger: the attempt is counted on disk now (a raising write, synced),
    /// while the reader captures and matches; its answer is told only after this write. A crash
    /// from here on keeps the count; a write that fails refuses the attempt.
    mutating func countTouch(into out: inout [PolicyOutput]) {
        guard scanOpen, !fingerAttemptPending else { return }
        LockoutRules.fingerAttemptStarted(&state)
        fingerAttemptPending = true
        flush(into: &out)
    }

    /// The scan ends without an answer (cancel, timeout, reader gone, fallback): a touch already
    /// counted is given back (best effort: it stays counted if that write fails).
    mutating func takeBackFingerAttempt(into out: inout [PolicyOutput]) {
        scanOpen = false
        guard fingerAttemptPending else { return }
        fingerAttemptPending = false
        LockoutRules.fingerAttemptTakenBack(&state)
        flush(ifItFails: .goOn, into: &out)
    }

    mutating func enterPasscode(nowMs: Int64, into out: inout [PolicyOutput]) {
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
    mutating func observe(_ nowMs: Int64) {
        state.lastSeenMs = max(state.lastSeenMs, nowMs)
    }

    /// Persist-before-reveal: any pending change is persisted before the output that reveals it.
    mutating func reveal(_ output: PolicyOutput, into out: inout [PolicyOutput]) {
        flush(into: &out)
        out.append(output)
    }

    mutating func flush(ifItFails: WriteFailure = .refuse, into out: inout [PolicyOutput]) {
        guard facts.stateReadable, !writesFailed else { return }
        var pending = state
        pending.lastSeenMs = persisted.lastSeenMs
        // lastSeenMs alone is not worth a write; it rides along with the next real change.
        guard pending != persisted else { return }
        persisted = state
        out.append(.persist(state, ifItFails: ifItFails))
    }

    mutating func finish(_ decision: Decision, into out: inout [PolicyOutput]) {
        reveal(.finish(decision), into: &out)
        phase = .finished
        finishedAfterWrite = out.contains { if case .persist(_, .refuse) = $0 { true } else { false } }
    }

    func reuseApplies(nowMs: Int64) -> Bool {
        let seconds = min(max(options.reuseSeconds, 0), config.maxReuseSeconds, EvaluateOptions.maxReuseSeconds)
        guard seconds > 0, let last = facts.lastSuccessMs, last <= nowMs else { return false }
        return nowMs - last < seconds * 1000
    }

    func success(_ phrase: Phrase, finger: FingerName?) -> Decision {
        Decision(.success, phrase, domainState: state.domainState.isEmpty ? nil : state.domainState, finger: finger)
    }

    var tries: Int { Int(min(max(options.tries, 1), EvaluateOptions.maxTries)) }

    var passcodeUsable: Bool {
        state.passcodeHash != nil && options.flags.contains(.passcodeCapable)
    }

    /// Hidden with an empty title; under policy 2 only offered when there is a passcode to fall back to.
    var fallbackAllowed: Bool {
        guard options.fallbackTitle != "" else { return false }
        return options.policy == .deviceOwnerAuthenticationWithBiometrics || passcodeUsable
    }

    var fallbackTitle: Phrase {
        options.fallbackTitle.map { .verbatim(Echo.truncated($0, maxBytes: Self.maxTitleBytes)) }
            ?? (options.policy == .deviceOwnerAuthentication ? .fallbackUsePasscode : .fallbackEnterPassword)
    }

    var lockedPhrase: Phrase { .biometryLocked(passcodeSet: state.passcodeHash != nil) }

    /// The most of a caller's reason a prompt repeats, in bytes of UTF-8.
    static let maxReasonBytes = 512
    /// The most of a caller's cancel or fallback title a prompt repeats.
    static let maxTitleBytes = 64

    /// The prompt shown to the person: the caller's reason, the instruction, the cancel title. The
    /// caller's texts are cut (`maxReasonBytes`, `maxTitleBytes`) so that the instruction always
    /// reaches the person and the prompt always fits a frame.
    func prompt(_ instruction: Phrase) -> Phrase {
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
