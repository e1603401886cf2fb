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
        /// A passcode held back until its user's hashing pace allows it.
        case passcodeDue(String)
        /// The touch held back `touchHoldMs` without an answer from the reader: count it now.
        case touchDue(UInt64)
    }

    /// How the run ended: the decision, and when the evaluator recorded a success (for the reuse window).
    struct Outcome {
        var decision: Decision
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

    /// This run's claim on the reader (`ReaderLease`), named by whose request it is.
    let holder: ReaderLease.Holder

    init(
        _ options: EvaluateOptions, user: String, facts: CallerFacts, lastSuccessMs: Int64?, label: RequestLabel,
        io: RequestIO, parts: DaemonParts
    ) {
        var evaluationFacts = facts.evaluation
        evaluationFacts.lastSuccessMs = lastSuccessMs
        evaluationFacts.label = label
        let (inputs, feed) = AsyncStream.makeStream(of: Input.self)
        // A right's use gives the reader up to an evaluation of its account (`UserQueue`).
        var yield: (@Sendable () -> Void)?
        if label.right != nil {
            yield = { _ = feed.yield(Input.policy(PolicyInput.cancelled(ResultCode.systemCancel))) }
        }
        self.holder = ReaderLease.Holder(id: parts.lease.newID(), label: label, yield: yield)
        self.evaluator = PolicyEvaluator(
            options: options, state: facts.state, facts: evaluationFacts, config: parts.configuration.lockout)
        self.parts = parts
        self.user = user
        self.io = io
        self.device = facts.device
        self.prints = facts.prints
        (self.inputs, self.feed) = (inputs, feed)
    }

    /// Runs to the decision on `isolation` (the daemon's actor, so that its state writes never
    /// interleave with another request's): the deadline, the client's signals and the caller's
    /// cancellation (`systemCancel`: the client went away) all become policy input.
    func run(isolation: isolated (any Actor)? = #isolation) async -> Outcome {
        let feed = self.feed
        let deadline = DeadlineTimer(ms: evaluator.options.timeoutMs) { feed.yield(.policy(.timedOut)) }
        let signals = io.signals
        let forwarder = Task {
            while let signal = await signals.next() {
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
        var (evaluator, outputs, shareLeftMs) = startHoldingTheReader()
        var recorded = evaluator.state  // as on disk
        // The account's share of the reader ends before the request's own deadline: the scan ends then.
        var shareTimer: DeadlineTimer?
        if let shareLeftMs, shareLeftMs < evaluator.options.timeoutMs {
            let feed = self.feed
            let why = ReaderUnavailable.readerShareUsed(
                account: user, shareMs: parts.configuration.readerShareMs, retryInMs: parts.configuration.readerShareMs)
            shareTimer = DeadlineTimer(ms: shareLeftMs) { feed.yield(.policy(.readerWithdrawn(why))) }
        }
        defer { shareTimer?.cancel() }
        defer { parts.lease.release(holder.id, nowMs: parts.clock()) }
        var scan: Task<Void, Never>?
        var typed: String?
        var streamEnded = false
        var paced: DeadlineTimer?
        defer { paced?.cancel() }
        var decision: Decision?
        var succeededAtMs: Int64?
        defer { scan?.cancel() }
        // A touch whose count waits `touchHoldMs` for the scan's answer (`Self.touchHoldMs`).
        var heldTouch: (id: UInt64, timer: DeadlineTimer)?
        var touches: UInt64 = 0
        defer { heldTouch?.timer.cancel() }
        var pending = inputs.makeAsyncIterator()
        // The outputs to execute answer a match (their record may be synced after the answer).
        var answersAMatch = false
        while true {
            // What executing the outputs itself produces: a failed write, or a passcode to check.
            var produced: PolicyInput?
            var checkTyped = false
            for output in outputs {
                switch output {
                case .persist(let newState, let ifItFails):
                    // A match's record is synced after its answer when it only relaxes the one on
                    // disk: written before it (a full file system refuses the match), the previous
                    // record the strict side until it is in place (docs/reliability.md, issue 29).
                    if parts.record(newState, user: user, previous: recorded, syncAfterAnswer: answersAMatch) {
                        recorded = newState
                    } else if ifItFails == .refuse {
                        produced = .recordFailed  // nothing after this write may happen
                    }
                case .notify(let notice):
                    io.send(notice.event)
                case .scanFinger(let finger):
                    // "Make sure a scan runs": a retry hint leaves the reader's scan running.
                    if scan == nil {
                        let feed = self.feed
                        let compared = finger.map { f in prints.filter { $0.finger == f } } ?? prints
                        let started = startScan(compared) { feed.yield(.policy($0)) }
                        let identifies = compared.count > 1 && device?.supportsIdentify == true
                        io.scanStarted?(
                            ScanStart(
                                scan: started, fingers: compared.map(\.finger),
                                finger: identifies ? nil : compared.first?.finger))
                        scan = started
                    }
                case .stopScan:
                    scan?.cancel()
                    scan = nil
                case .requestPasscode:
                    io.signals.askForPasscode()  // one PASSCODE, for the passcodeNeeded that follows
                case .checkPasscode:
                    checkTyped = true
                case .recordSuccess:
                    succeededAtMs = parts.clock()
                case .recordUse(.finger):
                    // An older use is the strict side (ADR 0007): written after the answer.
                    let (parts, user) = (self.parts, self.user)
                    parts.afterAnswer.add { parts.recordUse(.finger, user: user) }
                case .recordUse(let kind):
                    parts.recordUse(kind, user: user)
                case .finish(let d):
                    if decision == nil { decision = d }
                }
                if produced != nil { break }
            }
            if let decision, produced == nil { return Outcome(decision: decision, succeededAtMs: succeededAtMs) }
            // Off the reader for good (the passcode, or the end): another request may have it.
            if evaluator.phase != .scanning { parts.lease.release(holder.id, nowMs: parts.clock()) }
            let input: PolicyInput
            var matchEndsHold = false
            if let produced {
                input = produced
            } else if checkTyped, let passcode = typed {
                typed = nil
                input = await check(passcode, evaluator: evaluator)
            } else if let next = await pending.next() {
                switch next {
                case .policy(.fingerPresent) where scan != nil:
                    // Counted when the reader has not answered within the hold, else with its answer.
                    if heldTouch == nil {
                        touches += 1
                        let (id, feed) = (touches, self.feed)
                        heldTouch = (id, DeadlineTimer(ms: Self.touchHoldMs) { feed.yield(.touchDue(id)) })
                    }
                    outputs = []
                    continue
                case .policy(.fingerRetry(let hint)):
                    input = .fingerRetry(hint)  // a bad swipe: the touch, held or counted, stays
                case .touchDue(let id):
                    guard let held = heldTouch, held.id == id else {
                        outputs = []  // a hold already ended by an answer
                        continue
                    }
                    heldTouch = nil
                    input = .fingerPresent
                case .policy(let policyInput):
                    // Anything else ends a hold. A match is counted and reset in one write (below); a
                    // miss counts its touch itself before it is told (persist before reveal); a
                    // cancel, timeout or reader failure ends a scan whose touch was never counted.
                    if heldTouch != nil, case .fingerMatched = policyInput { matchEndsHold = true }
                    // Its timer is let go after the answer (each arm or cancel of a libdispatch timer
                    // wakes its manager thread); should it fire first, its id no longer matches.
                    if let timer = heldTouch?.timer { parts.afterAnswer.add { timer.cancel() } }
                    heldTouch = nil
                    input = policyInput
                case .passcodeTyped(let passcode):
                    // At most at a person's pace per user: a passcode that comes sooner waits for its
                    // turn while cancels, fallbacks and the deadline go on being heard.
                    let waitMs = parts.pacer.reserve(user, nowMs: parts.clock())
                    guard waitMs > 0 else {
                        typed = passcode
                        input = .passcodeEntered
                        break
                    }
                    let feed = self.feed
                    paced = DeadlineTimer(ms: waitMs) { feed.yield(.passcodeDue(passcode)) }
                    outputs = []  // nothing new to execute: wait for the next input
                    continue
                case .passcodeDue(let passcode):
                    typed = passcode
                    input = .passcodeEntered
                }
            } else {
                // The stream ends when the calling task is cancelled, perhaps before the cancellation
                // handler's input arrives: the evaluator is told all the same, so an attempt counted
                // ahead is given back.
                guard !streamEnded else { break }
                streamEnded = true
                input = .cancelled(.systemCancel)
            }
            switch input {
            case .fingerMatched, .fingerNotMatched, .readerFailed:
                // That scan has answered. A reader that answered at libfprint's match callback may
                // still be finishing the operation (waiting for the finger to lift, or reporting a
                // late error that no longer counts): as fprintd, it gets a moment to finish on its
                // own before it is cancelled. The reader's next operation waits for it meanwhile.
                // Its grace starts after the answer: a second within a few hundred microseconds.
                if let scan { parts.afterAnswer.add { Self.cancel(scan, afterMs: Self.finishGraceMs) } }
                scan = nil
            default: break
            }
            if case .fingerMatched = input { answersAMatch = true } else { answersAMatch = false }
            if matchEndsHold {
                // The touch and its match at once: the count and the match's reset are one write,
                // which must succeed before the match is told, as each of the two had to.
                let counted = evaluator.handle(.fingerPresent, nowMs: parts.clock())
                outputs = Self.mergingWrites(counted + evaluator.handle(input, nowMs: parts.clock()))
            } else {
                outputs = evaluator.handle(input, nowMs: parts.clock())
            }
        }
        return Outcome(
            decision: decision ?? Decision(.systemCancel, .cancelled(.systemCancel)), succeededAtMs: succeededAtMs)
    }

    /// Starts the evaluator; when it wants the reader and another request holds it, starts it again
    /// told that the reader is busy and by whom (the other request's program and account when it is
    /// for the same account). Synchronous: nothing can take the reader between the look and the take.
    private func startHoldingTheReader() -> (PolicyEvaluator, [PolicyOutput], shareLeftMs: Int64?) {
        var evaluator = self.evaluator
        let now = parts.clock()
        let outputs = evaluator.start(nowMs: now)
        guard outputs.contains(where: { if case .scanFinger = $0 { true } else { false } }) else {
            return (evaluator, outputs, nil)
        }
        let share = parts.configuration.readerShareMs
        let why: ReaderUnavailable
        switch parts.lease.take(holder, nowMs: now, shareMs: share) {
        case .taken(let forMs): return (evaluator, outputs, forMs)
        case .busy(let other): why = .readerBusy(by: other.label.account == user ? other.label : nil)
        case .shareUsed(let retryInMs): why = .readerShareUsed(account: user, shareMs: share, retryInMs: retryInMs)
        }
        var facts = self.evaluator.facts
        facts.readerUnavailable = why
        var told = PolicyEvaluator(
            options: self.evaluator.options, state: self.evaluator.state, facts: facts, config: self.evaluator.config)
        return (told, told.start(nowMs: now), nil)
    }

    /// Hashes a typed passcode under the stored hash's setting, off the daemon's executor (yescrypt
    /// takes ~20 ms): one `crypt_r`, whose output is both the verdict and the attempt token.
    private nonisolated(nonsending) func check(_ passcode: String, evaluator: PolicyEvaluator) async -> PolicyInput {
        guard let hash = evaluator.state.passcodeHash else {
            return .passcodeChecked(correct: false, attemptToken: "")
        }
        return await Task.detached {
            let token = PasscodeHasher.attemptToken(passcode, hash: hash)
            return .passcodeChecked(correct: PasscodeHasher.matches(token: token, hash: hash), attemptToken: token)
        }.value
    }

    /// How long a touch's count waits for the scan's answer (ADR 0008, issue 29). The count is
    /// written when the reader reports the finger so that it overlaps the capture and the match; a
    /// reader that answers at once (a match-on-chip sensor, libfprint's virtual device) would make
    /// the answer wait for two writes, the count and the match's reset, where one says the same.
    /// So a touch is counted `touchHoldMs` after the reader reported it, or with its answer when
    /// that comes first: a miss is counted before it is told either way (persist before reveal); a
    /// match writes its count and reset as one record (fingerFailures 0), which must succeed before
    /// it is told, so a full disk still refuses it; a crash within the hold, before any answer,
    /// keeps nothing, as for a reader that never reports the finger.
    static let touchHoldMs: Int64 = 50

    /// `outputs` with each write that the next output overwrites left out: the later record holds
    /// everything of the earlier one that matters, and nothing is revealed between them. The kept
    /// write refuses what follows when it fails if either did.
    static func mergingWrites(_ outputs: [PolicyOutput]) -> [PolicyOutput] {
        var kept: [PolicyOutput] = []
        for output in outputs {
            if case .persist(let state, let ifItFails) = output, case .persist(_, let earlier)? = kept.last {
                kept[kept.count - 1] = .persist(state, ifItFails: earlier == .refuse ? .refuse : ifItFails)
            } else {
                kept.append(output)
            }
        }
        return kept
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

    /// Verifies one print (the only one, or the first where the reader cannot identify) or identifies
    /// among several on the reader; the outcome becomes policy input.
    private func startScan(_ prints: [StoredPrint], report: @escaping @Sendable (PolicyInput) -> Void) -> Task<
        Void, Never
    > {
        let reader = parts.reader
        let device = self.device
        return Task {
            guard let reader, let device, !prints.isEmpty else {
                report(.readerFailed(.noDevice))
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
                case .retry(let hint): report(.fingerRetry(hint))
                // The touch: counted on disk while the reader captures and matches.
                case .fingerPresent: report(.fingerPresent)
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
            } catch ReaderFailure.cancelled {
                // The evaluation stopped the scan: nothing to report.
            } catch {
                report(.readerFailed(ReaderFailure(error)))
            }
        }
    }
}
