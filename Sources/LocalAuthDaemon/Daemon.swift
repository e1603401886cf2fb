// SPDX-License-Identifier: Apache-2.0
import FingerprintReader
import LocalAuthCore
import LocalAuthProtocol
import LocalAuthStore
import LocalAuthSystemd

/// Answers every request that comes through a door: the Unix socket's `Server`, or any other door
/// that builds a `PeerCredentials` and a `RequestIO` and calls `handle`.
///
/// One `switch` (`route`) gives each request its authorisation row, the account it acts on and its
/// audit record, and hands it to the use case that answers it: `ReaderRequests`, `EvaluationRun`,
/// `Enrollment`, `AccountRequests`, `Simulator`. The actor keeps what outlives a request: reuse
/// windows, the running evaluations (sleep cancels them) and each user's queue.
public actor Daemon {
    let parts: DaemonParts
    var reuseWindows = ReuseWindows()
    var running = RunningEvaluations()

    /// - Parameters:
    ///   - virtualReaderSocket: the virtual device's control socket when started with `--virtual-reader`.
    ///   - logind: sessions sd-login cannot place, the lid; nil: sd-login's files and the ACPI lid only.
    public init(
        reader: FingerprintReader?, store: EnrollmentStore, configuration: DaemonConfiguration = DaemonConfiguration(),
        virtualReaderSocket: String? = nil, audit: AuditLog, logind: Logind? = nil,
        clock: @escaping @Sendable () -> Int64 = wallClockMs, bootClock: (@Sendable () -> BootInstant?)? = nil
    ) {
        parts = DaemonParts(
            reader: reader, store: store, configuration: configuration, virtualReaderSocket: virtualReaderSocket,
            audit: audit, clock: clock, bootClock: bootClock ?? { BootClock.now(wallMs: clock()) },
            sessions: LoginSessions(logind: logind))
        let watchers = parts.watchers
        store.onRecordWritten { user, record in watchers.recordWritten(user: user, record: record) }
        if let reader { watchers.follow(reader.hotplugEvents()) }
    }

    /// Handles one request to its RESULT. Cancelling the calling task ends it as `systemCancel`.
    public func handle(_ request: Request, caller: PeerCredentials, io: RequestIO) async -> Answer {
        await handle(request, caller: caller, io: io, door: DoorContext())
    }

    /// The same, for a door that names a reader or a finger, or proved presence itself (`DoorContext`).
    public func handle(_ request: Request, caller: PeerCredentials, io: RequestIO, door: DoorContext) async
        -> Answer
    {
        // What an earlier answer left for the actor is done before anything of this request is read
        // (a record still to be synced is put in place by the store before that user is read).
        afterTheAnswer()
        let answer = await answer(request, caller: caller, io: io, door: door)
        // Once the answer is written (a door that says when: `RequestIO.whenAnswered`), or on its
        // way to the door (the caller leaves the actor first); at the request's priority or the
        // door's: a lower one held the actor on a thread the kernel ran after everything else on
        // a busy machine, and the next request waited for it.
        let after = parts.afterAnswer
        if !after.isEmpty || !after.isEmptyBesideTheActor {
            if let whenAnswered = io.whenAnswered {
                whenAnswered { Task { await self.afterTheAnswer() } }
            } else {
                Task { self.afterTheAnswer() }
            }
        }
        return answer
    }

    /// The actor's part of what answers left (a finger's use recorded, timers let go), then the
    /// record's sync and rename beside the actor: started after the actor's part, so that its hold
    /// on the store's lock during the fsync does not stop that part, and with it the actor. The
    /// next request of that user waits for it at the store's lock, after its questions to logind.
    private func afterTheAnswer() {
        let after = parts.afterAnswer
        after.run()
        if !after.isEmptyBesideTheActor {
            Task.detached(priority: Task.currentPriority) { after.runBesideTheActor() }
        }
    }

    /// Does what answers left for after them (`AfterAnswer`): a match's record synced and renamed
    /// into place, a finger's use recorded. `handle` has it done itself; public for what reads the
    /// store beside the daemon (the in-process tests), which waits for all of it.
    public func finishAfterAnswer() {
        parts.afterAnswer.run()
        parts.afterAnswer.runBesideTheActor()
    }

    private func answer(_ request: Request, caller: PeerCredentials, io: RequestIO, door: DoorContext) async
        -> Answer
    {
        let arrivedMs = parts.clock()
        let route = route(request, caller: caller, io: io, door: door, arrivedMs: arrivedMs)
        let target: String?
        if case .machine = route.work { target = nil } else { target = request.user ?? caller.userName }
        if case .refused(let why) = Authorization.decide(route.operation, caller: caller, target: target) {
            parts.audit.decision(route.operation, user: target, caller: caller, result: .notAuthorized, detail: why)
            return Answer(.notAuthorized, Phrase.said("Not allowed: %s", .verbatim(why)))
        }
        if let target, !EnrollmentStore.isValidUserName(target) {
            return Answer(
                .invalidRequest, Phrase.said("%s is not a valid user name", .verbatim(Echo.quoted(target))))
        }
        let result: Answer
        switch route.work {
        case .machine(let work): result = await work(self)
        case .anyAccount(let work): result = await work(self, target)
        case .account(let work):
            guard let user = target else {
                return Answer(
                    .invalidRequest,
                    Phrase.said("uid %s has no account name; name the user", .verbatim(String(caller.uid))))
            }
            // Who is asking and from where, before anything about the account is read or waited for:
            // a request the presence rule refuses learns nothing about it and counts nothing against it.
            var whereabouts: Whereabouts?
            if route.presence == .always || (route.presence == .unlessRoot && !caller.isRoot) {
                let found: Whereabouts
                if let early = door.presenceLookup?.take(
                    caller: caller, target: user, tty: route.tty, service: route.service, right: route.right)
                {
                    found = await early.value  // started by the door while polkit answered
                } else {
                    found = await Whereabouts.find(
                        caller: caller, target: user, tty: route.tty, service: route.service, right: route.right,
                        parts: parts)
                }
                whereabouts = found
                if route.presence == .always, let refusal = found.refusal {
                    return audited(route, target: target, caller: caller, Answer(refusal))
                }
            }
            result = await parts.userQueue.serialize(
                user, wantsReader: route.wantsReader, precedesRightUse: route.operation == .evaluate,
                deadlineMs: route.deadlineMs.map { $0 - (parts.clock() - arrivedMs) }
            ) {
                await work(self, user, whereabouts)
            } refused: { turn in
                Self.noTurn(turn, user: user, evaluation: route.presence == .always)
            }
        }
        return audited(route, target: target, caller: caller, result)
    }

    /// The answer to a request that got no turn: the same user's other request took the reader, or
    /// its deadline passed while it waited.
    private static func noTurn(_ turn: UserQueue.Turn, user: String, evaluation: Bool) -> Answer {
        let decision: Decision
        switch turn {
        case .granted, .readerBusy:
            let busy: RequestLabel? = if case .readerBusy(let label) = turn { label } else { nil }
            decision = Decision(evaluation ? .biometryNotAvailable : .busy, .fingerNotAvailable(.readerBusy(by: busy)))
        case .timedOut:
            decision = Decision(evaluation ? .systemCancel : .timedOut, .timedOutWaitingForTurn(user: user))
        }
        return Answer(decision)
    }

    private func audited(
        _ route: Route, target: String?, caller: PeerCredentials, _ result: Answer
    ) -> Answer {
        if route.audited {
            parts.audit.decision(
                route.operation, user: target, caller: caller, result: result.code,
                // English, with the phrase's identifier as a field (LOCALAUTH_PHRASE in the journal).
                detail: result.english, fields: route.auditFields + (route.via.map { [("via", $0)] } ?? []),
                phrase: result.phrase?.identifier)
        }
        return result
    }

    /// A request taken apart once: its row of the authorisation table, whether its decision is
    /// audited (with which fields), and the use case that answers it. The work is isolated to the
    /// daemon (its `isolated` parameter), so every use case runs on the actor, store writes included.
    private struct Route {
        enum Work {
            /// No account involved.
            case machine((isolated Daemon) async -> Answer)
            /// The named account or the caller's own, when there is one; no turn in its queue.
            case anyAccount((isolated Daemon, String?) async -> Answer)
            /// One account's state, read and written in that account's turn (`UserQueue`), with where
            /// the request comes from when `presence` asked.
            case account((isolated Daemon, String, Whereabouts?) async -> Answer)
        }
        /// When the presence rule is asked, before the account's turn (docs/security.md).
        enum PresenceCheck {
            case never
            /// Biometrics are the request (evaluate, canEvaluate): a refusal answers it at once.
            case always
            /// A proof of presence may be needed (a later finger, a first passcode): found for the proof.
            case unlessRoot
        }
        var operation: Operation
        var audited: Bool
        var auditFields: [(String, String)] = []
        var presence = PresenceCheck.never
        var tty: String? = nil
        var service: String? = nil
        /// The right a RIGHT_USE would release: named wherever its request is (`RequestLabel.right`).
        var right: String? = nil
        /// Told at once when the same user's request holds the reader, instead of waiting for its turn.
        var wantsReader = false
        /// How long it may wait for the user's turn, from its arrival: an evaluation's own timeout.
        var deadlineMs: Int64? = UserQueue.managementWaitMs
        var work: Work
        /// The door the request came through, when not the socket (`DoorContext.name`): audited as `via`.
        var via: String? = nil
    }

    private func route(
        _ request: Request, caller: PeerCredentials, io: RequestIO, door: DoorContext, arrivedMs: Int64
    ) -> Route {
        var route = plainRoute(request, caller: caller, io: io, door: door, arrivedMs: arrivedMs)
        route.via = door.name
        return route
    }

    /// Setting (`new`) or removing (nil) a passcode: the caller's proof of presence first, unless root.
    private func passcodeRoute(
        _ operation: Operation, new: String?, old: String?, caller: PeerCredentials, io: RequestIO
    ) -> Route {
        let accounts = AccountRequests(parts: parts)
        return Route(
            operation: operation, audited: true, presence: .unlessRoot, service: "localauthctl passcode",
            work: .account { daemon, user, whereabouts in
                await accounts.setPasscode(user: user, new: new, old: old, caller: caller) { proof in
                    await daemon.evaluate(proof, user: user, io: io, whereabouts: whereabouts!)
                }
            })
    }

    private func plainRoute(
        _ request: Request, caller: PeerCredentials, io: RequestIO, door: DoorContext, arrivedMs: Int64
    ) -> Route {
        let readers = ReaderRequests(parts: parts)
        let accounts = AccountRequests(parts: parts)
        switch request {
        case .devices:
            return Route(operation: .devices, audited: false, work: .machine { _ in await readers.devices() })
        case .simulate(let action, let argument):
            let simulator = Simulator(parts: parts)
            return Route(
                operation: .simulate, audited: true,
                work: .machine { _ in await simulator.simulate(action: action, argument: argument) })
        case .status:
            return Route(
                operation: .status, audited: false, work: .anyAccount { _, user in await readers.status(user: user) })
        case .canEvaluate(let policy, _):
            return Route(
                operation: .canEvaluate, audited: false, presence: .always,
                work: .account { _, user, whereabouts in
                    await readers.canEvaluate(policy: policy, user: user, whereabouts: whereabouts!, door: door)
                })
        case .evaluate(let options):
            return Route(
                operation: .evaluate, audited: true,
                auditFields: [("service", options.service ?? "-"), ("policy", String(options.policy.rawValue))],
                presence: .always, tty: options.tty, service: options.service, wantsReader: true,
                deadlineMs: options.timeoutMs,
                work: .account { daemon, user, whereabouts in
                    // The request's deadline runs from its arrival: the wait for its turn is part of it.
                    var options = options
                    options.timeoutMs = max(options.timeoutMs - (daemon.parts.clock() - arrivedMs), 1)
                    return Answer(
                        await daemon.evaluate(options, user: user, io: io, whereabouts: whereabouts!, door: door))
                })
        case .enroll(_, let finger, let passcodeCapable):
            let enrollment = Enrollment(parts: parts)
            return Route(
                operation: .enroll, audited: true, presence: .unlessRoot, service: "localauthctl enroll",
                wantsReader: true, deadlineMs: parts.configuration.enrollTimeoutMs,
                work: .account { daemon, user, whereabouts in
                    await enrollment.enroll(
                        user: user, finger: finger, passcodeCapable: passcodeCapable, caller: caller, io: io,
                        door: door
                    ) { proof in
                        await daemon.evaluate(proof, user: user, io: io, whereabouts: whereabouts!, door: door)
                    }
                })
        case .list:
            return Route(
                operation: .list, audited: true,
                work: .account { _, user, _ in await accounts.list(user: user, readerID: door.readerID) })
        case .delete(_, let finger, let all):
            return Route(
                operation: .delete, audited: true,
                work: .account { _, user, _ in
                    await accounts.delete(user: user, finger: finger, all: all, readerID: door.readerID)
                })
        case .passcodeSet(_, let passcode, let old):
            return passcodeRoute(.passcodeSet, new: passcode, old: old, caller: caller, io: io)
        case .passcodeRemove(_, let old):
            return passcodeRoute(.passcodeRemove, new: nil, old: old, caller: caller, io: io)
        case .passwordUsed(_, let service):
            let reports = PasswordReports(parts: parts)
            return Route(
                operation: .passwordUsed, audited: true, auditFields: [("service", service ?? "-")],
                work: .account { _, user, _ in await reports.record(user: user, caller: caller) })
        case .lockoutReset:
            return Route(
                operation: .lockoutReset, audited: true,
                work: .account { daemon, user, _ in daemon.resetLockout(user: user) })
        case .rightSave(_, let identifier, let requirement, let secret):
            let rights = RightRequests(parts: parts)
            let fields = [("right", identifier), ("requirement", String(requirement.rawValue))]
            guard let owner = caller.program.identity else { return Self.unknownProgram(.rightSave, caller, fields) }
            return Route(
                operation: .rightSave, audited: true, auditFields: fields + [("program", owner.stored)],
                work: .account { _, user, _ in
                    await rights.save(
                        user: user, owner: owner, identifier: identifier, requirement: requirement, secret: secret)
                })
        case .rightGet(_, let identifier):
            let rights = RightRequests(parts: parts)
            guard let owner = caller.program.identity else {
                return Self.unknownProgram(.rightGet, caller, [("right", identifier)])
            }
            return Route(
                operation: .rightGet, audited: false,
                work: .account { _, user, _ in await rights.get(user: user, owner: owner, identifier: identifier) })
        case .rightRemove(let named, let identifier):
            let rights = RightRequests(parts: parts)
            let fields = [("right", identifier ?? "*")]
            // Root acting on another account removes every program's right of it (an administrator's wipe).
            let administrator = caller.isRoot && named != nil && named != caller.userName
            guard administrator || caller.program.identity != nil else {
                return Self.unknownProgram(.rightRemove, caller, fields)
            }
            let owner = administrator ? nil : caller.program.identity
            return Route(
                operation: .rightRemove, audited: true, auditFields: fields + [("program", owner?.stored ?? "*")],
                work: .account { _, user, _ in await rights.remove(user: user, owner: owner, identifier: identifier) })
        case .rightUse(let options) where options.operation == .deauthorize:
            // Dropping an authorization asks no one and needs neither the reader nor the seat.
            let rights = RightRequests(parts: parts)
            let pid = caller.pid
            return Route(
                operation: .rightUse, audited: true,
                auditFields: [("right", options.identifier), ("operation", String(options.operation.rawValue))],
                work: .account { _, user, _ in
                    rights.deauthorize(RightGrants.holder(user: user, identifier: options.identifier, pid: pid))
                })
        case .rightUse(let options):
            let rights = RightRequests(parts: parts)
            let pid = caller.pid
            let fields = [
                ("right", options.identifier), ("operation", String(options.operation.rawValue)),
                ("service", options.service ?? "-"),
            ]
            guard let owner = caller.program.identity else { return Self.unknownProgram(.rightUse, caller, fields) }
            // The requirement is evaluated like an EVALUATE: the same presence rule, decided before
            // the right (or anything else of the account) is read.
            return Route(
                operation: .rightUse, audited: true, auditFields: fields + [("program", owner.stored)],
                presence: .always, tty: options.tty, service: options.service, right: options.identifier,
                wantsReader: true, deadlineMs: options.timeoutMs,
                work: .account { daemon, user, whereabouts in
                    let holder = RightGrants.holder(user: user, identifier: options.identifier, pid: pid)
                    return await rights.use(options, user: user, owner: owner, holder: holder) { evaluation in
                        var evaluation = evaluation
                        evaluation.timeoutMs = max(evaluation.timeoutMs - (daemon.parts.clock() - arrivedMs), 1)
                        return Answer(await daemon.evaluate(evaluation, user: user, io: io, whereabouts: whereabouts!))
                    }
                })
        case .importFprintd(let from):
            let importer = FprintdImport(parts: parts)
            let root = from ?? parts.configuration.fprintdStateDir
            return Route(
                operation: .importFprintd, audited: true,
                work: .machine { daemon in
                    await importer.run(from: root, caller: caller) { user, body in
                        await daemon.parts.userQueue.serialize(user, body)
                    }
                })
        }
    }

    /// A right request from a process whose program the daemon cannot tell: refused, after the
    /// authorisation table (another account's rights are still refused as such), without a turn.
    private static func unknownProgram(_ operation: Operation, _ caller: PeerCredentials, _ fields: [(String, String)])
        -> Route
    {
        let why: String
        switch caller.program {
        case .unknown(let reason): why = reason
        case .known: why = "-"
        }
        return Route(
            operation: operation, audited: true, auditFields: fields + [("program", "?")],
            work: .anyAccount { _, _ in Answer(.notAuthorized, RightMessages.programUnknown(why)) })
    }

    /// One evaluation for `user`: the facts it decides on, its reuse window, its run (which sleep
    /// can cancel). Also the proof of presence before a later finger is enrolled.
    func evaluate(
        _ options: EvaluateOptions, user: String, io: RequestIO, whereabouts: Whereabouts,
        door: DoorContext = DoorContext()
    ) async -> Decision {
        if let refusal = whereabouts.refusal { return refusal }
        let facts = await CallerFacts.gather(
            user: user, whereabouts: whereabouts, parts: parts, readerID: door.readerID, finger: door.finger)
        let scope = ReuseScope(user: user, service: options.service ?? "", session: whereabouts.reuseKey)
        let run = EvaluationRun(
            options, user: user, facts: facts, lastSuccessMs: reuseWindows[scope], label: whereabouts.label, io: io,
            parts: parts)
        let id = running.add(run.feed)
        defer { running.remove(id) }
        let outcome = await run.run()
        if let at = outcome.succeededAtMs { reuseWindows.record(scope, atMs: at) }
        return outcome.decision
    }

    private func resetLockout(user: String) -> Answer {
        let result = AccountRequests(parts: parts).resetLockout(user: user)
        if result.isSuccess { reuseWindows.forget(user: user) }
        return result
    }

    /// Returns when the actor runs it: the watchdog's proof that requests are being served.
    public func ping() {}

    /// Whether `name` can be an account's name here (the store's rule, which `handle` applies too):
    /// for a door that must refuse a name before it asks anyone else (fprintd's polkit).
    public static func isValidUserName(_ name: String) -> Bool { EnrollmentStore.isValidUserName(name) }
}
