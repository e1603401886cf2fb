// SPDX-License-Identifier: Apache-2.0

import LocalAuthProtocol

/// Setting, changing or removing a passcode (PASSCODE_SET, PASSCODE_REMOVE) as a pure state machine,
/// with the evaluator's counting rules (`LockoutRules`): root needs no proof; anyone else proves
/// presence with the current passcode (counted on disk before it is hashed; refused unchecked during
/// a delay) or, for a first passcode, with an enrolled finger in the same request.
///
/// The daemon calls `start`, executes the outputs in order and feeds what they produce to `handle`
/// until `finish`. It checks the new passcode's form (length, NUL) before it starts the machine, so a
/// malformed one costs no attempt.
public struct PasscodeChange: Sendable {
    public enum Change: Sendable, Equatable {
        case set
        case remove
    }

    public enum Input: Sendable, Equatable {
        /// The biometrics-only evaluation asked for by `.proveByFinger` ended with `decision`; `state`
        /// is the user's state after it (its misses were counted).
        case fingerProof(Decision, state: UserAuthState)
        /// The hash of the current passcode the client sent, checked after `.checkOldPasscode`.
        case oldPasscodeChecked(correct: Bool)
        /// The new passcode's hash, after `.hashNewPasscode`.
        case newPasscodeHashed(String)
        /// The new passcode could not be hashed.
        case hashingFailed
        /// A `.persist` could not be written.
        case recordFailed
    }

    public enum Output: Sendable, Equatable {
        case persist(UserAuthState, ifItFails: WriteFailure)
        /// Run a biometrics-only evaluation of the user's enrolled fingers (a first passcode).
        case proveByFinger
        /// Hash the current passcode the client sent against the stored hash.
        case checkOldPasscode
        /// Hash the new passcode.
        case hashNewPasscode
        case finish(Decision)
    }

    public let user: String
    public let change: Change
    public let callerIsRoot: Bool
    public let oldPasscodeGiven: Bool
    public let config: LockoutConfig
    public private(set) var state: UserAuthState
    public private(set) var isFinished = false
    private let stateReadable: Bool
    private var stage = Stage.idle

    private enum Stage: Equatable {
        case idle, provingByFinger, checkingOld, hashingNew, storing
    }

    public init(
        user: String, change: Change, callerIsRoot: Bool, oldPasscodeGiven: Bool, state: UserAuthState,
        stateReadable: Bool, config: LockoutConfig
    ) {
        self.user = user
        self.change = change
        self.callerIsRoot = callerIsRoot
        self.oldPasscodeGiven = oldPasscodeGiven
        self.state = state
        self.stateReadable = stateReadable
        self.config = config
    }

    public mutating func start(nowMs: Int64) -> [Output] {
        guard stage == .idle, !isFinished else { return [] }
        state.lastSeenMs = max(state.lastSeenMs, nowMs)
        guard stateReadable else { return finish(Decision(.biometryNotAvailable, .stateUnreadable)) }
        if callerIsRoot { return apply() }
        guard state.passcodeHash != nil else {
            guard change == .set else { return finish(Decision(.notFound, .noPasscodeToRemove(user: user))) }
            stage = .provingByFinger
            return [.proveByFinger]
        }
        let remaining = PasscodeDelay.remainingMs(state: state, nowMs: nowMs)
        if remaining > 0 { return finish(Decision(.authenticationFailed, .passcodeLocked(remainingMs: remaining))) }
        guard oldPasscodeGiven else { return finish(Decision(.authenticationFailed, .currentPasscodeNeeded)) }
        LockoutRules.passcodeAttemptStarted(&state, config: config)
        stage = .checkingOld
        return [.persist(state, ifItFails: .refuse), .checkOldPasscode]
    }

    public mutating func handle(_ input: Input, nowMs: Int64) -> [Output] {
        // The final write's `finish` follows it in the same batch: a failed write still answers.
        guard !isFinished || (input == .recordFailed && stage == .storing) else { return [] }
        state.lastSeenMs = max(state.lastSeenMs, nowMs)
        switch (input, stage) {
        case (.recordFailed, .checkingOld):
            return finish(Decision(.biometryNotAvailable, .attemptNotRecorded))
        case (.recordFailed, .storing):
            stage = .idle
            return finish(Decision(.internalError, .passcodeNotStored))
        case (.fingerProof(let decision, let after), .provingByFinger):
            state = after
            guard decision.isSuccess else {
                return finish(
                    Decision(decision.code, .firstPasscodeNeedsFinger(user: user, because: decision.phrase)))
            }
            return apply()
        case (.oldPasscodeChecked(let correct), .checkingOld):
            guard correct else {
                let remaining = PasscodeDelay.remainingMs(state: state, nowMs: nowMs)
                let phrase: Phrase =
                    remaining > 0
                    ? .both(.currentPasscodeWrong, .passcodeLocked(remainingMs: remaining)) : .currentPasscodeWrong
                return finish(Decision(.authenticationFailed, phrase))
            }
            return apply()
        case (.newPasscodeHashed(let hash), .hashingNew):
            state.passcodeHash = hash
            return store(.passcodeSet(user: user))
        case (.hashingFailed, .hashingNew):
            return finish(Decision(.internalError, .passcodeNotHashed))
        default:
            return []
        }
    }

    /// Presence is proved (or not needed): set or remove.
    private mutating func apply() -> [Output] {
        switch change {
        case .set:
            stage = .hashingNew
            return [.hashNewPasscode]
        case .remove:
            guard state.passcodeHash != nil else { return finish(Decision(.notFound, .noPasscodeToRemove(user: user))) }
            state.passcodeHash = nil
            return store(.passcodeRemoved(user: user))
        }
    }

    /// The new passcode (or none) with its counters cleared, written before the success is told.
    private mutating func store(_ done: Phrase) -> [Output] {
        LockoutRules.passcodeReplaced(&state)
        stage = .storing
        return [.persist(state, ifItFails: .refuse)] + finish(Decision(.success, done))
    }

    private mutating func finish(_ decision: Decision) -> [Output] {
        isFinished = true
        return [.finish(decision)]
    }
}
