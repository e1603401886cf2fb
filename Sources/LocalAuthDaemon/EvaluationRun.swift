// SPDX-License-Identifier: Apache-2.0
import FingerprintReader
import LocalAuthCore
import LocalAuthProtocol
import LocalAuthStore
import Synchronization

/// One evaluation from start to RESULT: the policy evaluator fed by the reader, the client's
/// signals and a deadline, its outputs executed in order (a state is persisted before anything
/// after it is revealed).
struct EvaluationRun {
    /// What an evaluation waits for: policy input, or a passcode still to be checked.
    enum Input: Sendable {
        case policy(PolicyInput)
        case passcodeTyped(String)
    }

    /// How the run ended: the RESULT, and when the evaluator recorded a success (for the reuse window).
    struct Outcome {
        var result: LocalAuthProtocol.Result
        var succeededAtMs: Int64?
    }

    let parts: DaemonParts
    let user: String
    let io: RequestIO
    let evaluator: PolicyEvaluator
    /// The reader and prints a scan uses; no device: a scan fails at once.
    let device: ReaderDeviceInfo?
    let prints: [StoredPrint]
    /// Everything the run waits for arrives here; `feed` puts it there (sleep cancels through it).
    let inputs: AsyncStream<Input>
    let feed: AsyncStream<Input>.Continuation

    init(
        _ options: EvaluateOptions, user: String, facts: CallerFacts, lastSuccessMs: Int64?, io: RequestIO,
        parts: DaemonParts
    ) {
        var evaluationFacts = facts.evaluation
        evaluationFacts.lastSuccessMs = lastSuccessMs
        self.evaluator = PolicyEvaluator(
            options: options, state: facts.state, facts: evaluationFacts, config: parts.configuration.lockout)
        self.parts = parts
        self.user = user
        self.io = io
        self.device = facts.device
        self.prints = facts.prints
        (inputs, feed) = AsyncStream.makeStream(of: Input.self)
    }

    /// Runs to the RESULT on `isolation` (the daemon's actor, so that its state writes never
    /// interleave with another request's): the deadline, the client's signals and the caller's
    /// cancellation (`systemCancel`: the client went away) all become policy input.
    func run(isolation: isolated (any Actor)? = #isolation) async -> Outcome {
        let feed = self.feed
        let deadline = DeadlineTimer(ms: evaluator.options.timeoutMs) { feed.yield(.policy(.timedOut)) }
        let signals = io.signals
        let forwarder = Task {
            for await signal in signals {
                switch signal {
                case .cancel: feed.yield(.policy(.cancelled(.userCancel)))
                case .fallback: feed.yield(.policy(.fallbackChosen))
                case .passcode(let passcode): feed.yield(.passcodeTyped(passcode))
                }
            }
        }
        defer {
            deadline.cancel()
            forwarder.cancel()
        }
        // The operation closure would run off the actor unless told where: drive() is told.
        return await withTaskCancellationHandler {
            await drive(isolation: isolation)
        } onCancel: {
            feed.yield(.policy(.cancelled(.systemCancel)))
        }
    }

    /// Starts the evaluator, executes its outputs in order and feeds it inputs until it finishes.
    private func drive(isolation: isolated (any Actor)?) async -> Outcome {
        var evaluator = self.evaluator
        var recorded = evaluator.state  // as on disk
        var outputs = evaluator.start(nowMs: parts.clock())
        var scan: Task<Void, Never>?
        var acceptsPasscode = false
        var result: LocalAuthProtocol.Result?
        var succeededAtMs: Int64?
        defer { scan?.cancel() }
        var pending = inputs.makeAsyncIterator()
        while true {
            for output in outputs {
                switch output {
                case .persist(let newState):
                    auditLockoutChanges(from: recorded, to: newState)
                    do {
                        try parts.store.saveState(newState, user: user)
                        recorded = newState
                    } catch {
                        // A failure that cannot be recorded must not be forgotten: end the evaluation.
                        parts.audit.notice("cannot record the state of \(user): \(error)")
                        result = Result(.internalError, "The daemon could not record the attempt")
                    }
                case .event(let event):
                    if event.kind == .passcodeNeeded { acceptsPasscode = true }
                    io.send(event)
                case .scanFinger:
                    // "Make sure a scan runs": a retry hint leaves the reader's scan running.
                    if scan == nil {
                        let feed = self.feed
                        let started = startScan { feed.yield(.policy($0)) }
                        io.scanStarted?(started)
                        scan = started
                    }
                case .stopScan:
                    scan?.cancel()
                    scan = nil
                case .requestPasscode:
                    acceptsPasscode = true
                case .recordSuccess:
                    succeededAtMs = parts.clock()
                case .finish(let r):
                    if result == nil { result = r }
                }
                if result != nil { break }
            }
            if result != nil || evaluator.isFinished { break }
            // After a wrong passcode the client is asked again explicitly, so that a client
            // which prompts only on passcodeNeeded never waits for a question that never comes.
            if evaluator.phase == .awaitingPasscode,
                outputs.contains(where: { if case .event(let e) = $0 { e.kind == .passcodeWrong } else { false } })
            {
                io.send(Event(.passcodeNeeded, "Enter your passcode again"))
            }
            guard let next = await pending.next() else { break }
            let input: PolicyInput
            switch next {
            case .policy(let policyInput): input = policyInput
            case .passcodeTyped(let passcode):
                // A passcode the evaluator did not ask for is dropped, never checked.
                guard acceptsPasscode else { continue }
                input = await check(passcode, evaluator: evaluator)
            }
            switch input {
            case .fingerMatched, .fingerNotMatched, .readerFailed:
                // That scan has answered. A reader that answered at libfprint's match callback may
                // still be finishing the operation (waiting for the finger to lift, or reporting a
                // late error that no longer counts): as fprintd, it gets a moment to finish on its
                // own before it is cancelled. The reader's next operation waits for it meanwhile.
                if let scan { Self.cancel(scan, afterMs: Self.finishGraceMs) }
                scan = nil
            default: break
            }
            outputs = evaluator.handle(input, nowMs: parts.clock())
        }
        return Outcome(
            result: result ?? Result(.systemCancel, "The request was cancelled"), succeededAtMs: succeededAtMs)
    }

    /// Checks a typed passcode against the current hash, off the daemon's executor (yescrypt takes
    /// ~20 ms). During a delay the evaluator refuses any passcode unchecked, so nothing is hashed then.
    private nonisolated(nonsending) func check(_ passcode: String, evaluator: PolicyEvaluator) async -> PolicyInput {
        guard evaluator.passcodeDelayRemainingMs(nowMs: parts.clock()) <= 0, let hash = evaluator.state.passcodeHash
        else {
            return .passcodeEntered(correct: false, attemptToken: "")
        }
        return await Task.detached {
            .passcodeEntered(
                correct: PasscodeHasher.verify(passcode, hash: hash),
                attemptToken: PasscodeHasher.attemptToken(passcode, hash: hash))
        }.value
    }

    /// How long a scan that has answered may go on before it is cancelled (fprintd's
    /// `VERIFY_STOP_DEVICE_WAIT`, one second).
    static let finishGraceMs: Int64 = 1000

    /// Cancels `scan` unless it ends within `ms`.
    static func cancel(_ scan: Task<Void, Never>, afterMs ms: Int64) {
        let timer = DeadlineTimer(ms: ms) { scan.cancel() }
        Task {
            await scan.value
            timer.cancel()
        }
    }

    /// Verifies (one print) or identifies (several) on the reader; the outcome becomes policy input.
    private func startScan(report: @escaping @Sendable (PolicyInput) -> Void) -> Task<Void, Never> {
        let reader = parts.reader
        let device = self.device
        let prints = self.prints
        return Task {
            guard let reader, let device, !prints.isEmpty else {
                report(.readerFailed("no fingerprint reader is connected"))
                return
            }
            // The answer counts once: at libfprint's match callback when it gives one (the reader may
            // finish the operation later), else when the operation finishes.
            let answered = Mutex(false)
            let answer: @Sendable (Int?) -> Void = { index in
                guard
                    answered.withLock({ done in
                        defer { done = true }; return !done
                    })
                else { return }
                report(index.map { .fingerMatched(finger: prints[$0].finger) } ?? .fingerNotMatched)
            }
            let progress: @Sendable (ReaderProgress) -> Void = { p in
                switch p {
                case .retry(let r): report(.fingerRetry(RetryHint(r)))
                case .matched(let index) where index.map({ prints.indices.contains($0) }) ?? true: answer(index)
                default: break
                }
            }
            do {
                if prints.count > 1 && device.supportsIdentify {
                    answer(
                        try await reader.identify(deviceID: device.id, prints: prints.map(\.data), progress: progress))
                } else {
                    switch try await reader.verify(deviceID: device.id, print: prints[0].data, progress: progress) {
                    case .match: answer(0)
                    case .noMatch: answer(nil)
                    }
                }
            } catch ReaderError.cancelled {
                // The evaluation stopped the scan: nothing to report.
            } catch {
                report(.readerFailed(ReaderError.describe(error)))
            }
        }
    }

    /// Audits lockouts as they are set or lifted (the state is about to be persisted).
    private func auditLockoutChanges(from old: UserAuthState, to new: UserAuthState) {
        if new.biometryLocked != old.biometryLocked {
            parts.audit.lockout(user: user, new.biometryLocked ? "biometry locked" : "biometry unlocked")
        }
        if new.passcodeLockedUntilMs != old.passcodeLockedUntilMs && new.passcodeLockedUntilMs > 0 {
            let seconds = (new.passcodeLockedUntilMs - max(parts.clock(), new.lastSeenMs) + 999) / 1000
            parts.audit.lockout(
                user: user, "passcode delayed for \(seconds) s after \(new.passcodeFailures) wrong passcodes")
        }
    }
}
