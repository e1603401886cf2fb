// SPDX-License-Identifier: Apache-2.0
import CSystemd
import FingerprintReader
import LocalAuthCore
import LocalAuthProtocol
import LocalAuthStore

#if canImport(Glibc)
    import Glibc
#endif

/// What a running request may receive from its client besides the request itself.
public enum ClientSignal: Sendable, Equatable {
    case passcode(String)
    case fallback
    case cancel
}

/// The I/O of one request: events go out, client signals come in.
public struct RequestIO: Sendable {
    public let send: @Sendable (Event) -> Void
    public let signals: AsyncStream<ClientSignal>
    public init(send: @escaping @Sendable (Event) -> Void, signals: AsyncStream<ClientSignal>) {
        self.send = send
        self.signals = signals
    }
}

/// Wall-clock milliseconds; the policy core takes time as a parameter, the daemon reads it here.
@Sendable public func wallClockMs() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}

/// Answers every request: authorisation, the store, the reader and the policy evaluator.
public actor Daemon {
    public struct Settings: Sendable {
        public var lockout = LockoutConfig()
        /// Set when started with `--virtual-reader`: the virtual device's control socket.
        public var virtualReaderSocket: String?
        public var enrollTimeoutMs: Int64 = 60_000
        /// libfprint drivers of readers that are not built into the machine (a USB reader on the
        /// desk): they stay usable while a laptop's lid is closed. Every other reader is built in.
        public var externalReaderDrivers: Set<String> = []
        public init() {}
    }

    let reader: FingerprintReader?
    let store: EnrollmentStore
    let settings: Settings
    let audit: AuditLog
    let clock: @Sendable () -> Int64
    /// logind over D-Bus: sessions sd-login cannot place, the lid. Nil in unit tests.
    let logind: Logind?
    /// The inputs of running evaluations, so that sleep can cancel them.
    var running: [Int: AsyncStream<EvaluationInput>.Continuation] = [:]
    var nextEvaluation = 0
    /// Last success per reuse scope (user, service, session): memory only, so a restart or a
    /// suspend never extends a reuse window.
    var lastSuccess: [ReuseScope: Int64] = [:]
    /// Requests that read and write one user's state run one at a time.
    var userQueues: [String: [CheckedContinuation<Void, Never>]] = [:]

    struct ReuseScope: Hashable {
        var user: String
        var service: String
        var session: String
    }

    public init(
        reader: FingerprintReader?, store: EnrollmentStore, settings: Settings, audit: AuditLog,
        logind: Logind? = nil, clock: @escaping @Sendable () -> Int64 = wallClockMs
    ) {
        self.reader = reader
        self.logind = logind
        self.store = store
        self.settings = settings
        self.audit = audit
        self.clock = clock
    }

    // MARK: Dispatch

    /// Handles one request to its RESULT.
    public func handle(_ request: Request, caller: PeerCredentials, io: RequestIO) async -> LocalAuthProtocol.Result {
        let operation = Operation(request)
        let target: String?
        switch request {
        case .devices, .simulate: target = nil
        default: target = request.user ?? caller.userName
        }
        if case .refused(let why) = Authorization.decide(operation, caller: caller, target: target) {
            audit.decision(operation, user: target, caller: caller, result: .notAuthorized, detail: why)
            return Result(.notAuthorized, "Not allowed: \(why)")
        }
        if let target, !EnrollmentStore.isValidUserName(target) {
            return Result(.invalidRequest, "'\(target)' is not a valid user name")
        }
        let result: LocalAuthProtocol.Result
        switch request {
        case .devices: result = await devices()
        case .simulate(let action, let argument): result = await simulate(action: action, argument: argument)
        case .status: result = await status(user: target)
        default:
            guard let user = target else {
                return Result(.invalidRequest, "uid \(caller.uid) has no account name; name the user")
            }
            result = await withUserQueue(user) {
                switch request {
                case .canEvaluate(let policy, _): await self.canEvaluate(policy: policy, user: user, caller: caller)
                case .evaluate(let options): await self.evaluate(options, user: user, caller: caller, io: io)
                case .enroll(_, let finger, let passcodeCapable):
                    await self.enroll(
                        user: user, finger: finger, passcodeCapable: passcodeCapable, caller: caller, io: io)
                case .list: await self.list(user: user)
                case .delete(_, let finger, let all): await self.delete(user: user, finger: finger, all: all)
                case .passcodeSet(_, let passcode, let old):
                    await self.setPasscode(user: user, new: passcode, old: old, caller: caller)
                case .passcodeRemove(_, let old): await self.setPasscode(user: user, new: nil, old: old, caller: caller)
                case .lockoutReset: self.lockoutReset(user: user)
                case .status, .devices, .simulate: Result(.internalError, "unreachable")
                }
            }
        }
        if operation != .status && operation != .devices && operation != .canEvaluate {
            var fields: [(String, String)] = []
            if case .evaluate(let o) = request {
                fields = [("service", o.service ?? "-"), ("policy", String(o.policy.rawValue))]
            }
            audit.decision(
                operation, user: target, caller: caller, result: result.resultCode ?? .internalError,
                detail: result.message, fields: fields)
        }
        return result
    }

    private func withUserQueue(_ user: String, _ body: () async -> LocalAuthProtocol.Result) async
        -> LocalAuthProtocol.Result
    {
        if userQueues[user] != nil {
            await withCheckedContinuation { userQueues[user, default: []].append($0) }
        } else {
            userQueues[user] = []
        }
        defer {
            if var waiters = userQueues[user], !waiters.isEmpty {
                let next = waiters.removeFirst()
                userQueues[user] = waiters
                next.resume()
            } else {
                userQueues[user] = nil
            }
        }
        return await body()
    }

    // MARK: Reader facts

    /// The reader biometrics use: the first one libfprint reports.
    private func currentDevice() async -> ReaderDeviceInfo? {
        let device = await reader?.devices().first
        if device == nil { reader?.lookForReadersIfNone() }  // a replugged reader is found again
        return device
    }

    private func loadState(_ user: String) -> (state: UserAuthState, readable: Bool, why: String?) {
        do {
            switch try store.loadState(user: user) {
            case .absent: return (UserAuthState(), true, nil)
            case .ok(let state): return (state, true, nil)
            case .corrupt(let why):
                audit.notice(
                    "stored state of \(user) is unreadable (\(why)); biometrics refused until `localauthctl lockout reset --user \(user)`"
                )
                return (UserAuthState(), false, why)
            }
        } catch {
            audit.notice("cannot read the state of \(user): \(error)")
            return (UserAuthState(), false, "\(error)")
        }
    }

    private func enrolledPrints(_ user: String, on device: ReaderDeviceInfo?) -> [StoredPrint] {
        guard let device else { return [] }
        return (try? store.prints(user: user, deviceKey: device.storageKey)) ?? []
    }

    /// What an evaluation decides on, and the caller's session (the evaluation's reuse scope).
    private func facts(user: String, caller: PeerCredentials, tty: String?) async -> (
        EvaluationFacts, UserAuthState, ReaderDeviceInfo?, [StoredPrint], CallerSession
    ) {
        let device = await currentDevice()
        let (state, readable, _) = loadState(user)
        let prints = enrolledPrints(user, on: device)
        let builtIn = device.map { !settings.externalReaderDrivers.contains($0.driver) } ?? false
        let session = await logindView(of: caller, tty: tty, askLid: builtIn)
        let unavailable: String?
        if session.isRemote {
            unavailable = "the request comes from a remote session"
        } else if device == nil {
            unavailable = "no fingerprint reader is connected"
        } else if session.lidClosed {
            unavailable = "the laptop lid is closed and the reader is built in"
        } else {
            unavailable = nil
        }
        let facts = EvaluationFacts(
            readerAvailable: unavailable == nil, readerUnavailableReason: unavailable,
            enrolledFingers: prints.map(\.finger), stateReadable: readable)
        return (facts, state, unavailable == nil ? device : nil, prints, session)
    }

    // MARK: Requests

    func devices() async -> LocalAuthProtocol.Result {
        let devices = await reader?.devices() ?? []
        let extra = devices.map {
            var caps: DeviceCapabilities = []
            if $0.supportsIdentify { caps.insert(.identify) }
            if $0.hasStorage { caps.insert(.storage) }
            if $0.isSwipe { caps.insert(.swipe) }
            return DeviceInfo(
                name: $0.name, driver: $0.driver, deviceId: $0.id, enrollStages: Int64($0.enrollStages),
                capabilities: caps
            ).field
        }
        return Result(.success, devices.count == 1 ? "1 reader" : "\(devices.count) readers", extra: extra)
    }

    func status(user: String?) async -> LocalAuthProtocol.Result {
        let device = await currentDevice()
        var extra = Frame(.result)
        extra.append(.readerPresent, bool: device != nil)
        extra.append(.biometryType, int: PolicyEvaluator.biometryType(readerAvailable: device != nil).rawValue)
        guard let user else {
            return Result(.success, device.map { "reader: \($0.name)" } ?? "no reader", extra: extra.fields)
        }
        let (state, readable, _) = loadState(user)
        let count = enrolledPrints(user, on: device).count
        extra.append(.enrolledCount, int: Int64(count))
        extra.append(.biometryLocked, bool: state.biometryLocked || !readable)
        extra.append(.passcodeSet, bool: state.passcodeHash != nil)
        let reader = device.map { "reader: \($0.name)" } ?? "no reader"
        return Result(
            .success, "\(reader); \(user): \(count) finger\(count == 1 ? "" : "s") enrolled", extra: extra.fields)
    }

    func canEvaluate(policy: PolicyKind, user: String, caller: PeerCredentials) async -> LocalAuthProtocol.Result {
        let (facts, state, _, _, _) = await facts(user: user, caller: caller, tty: nil)
        var result = PolicyEvaluator.canEvaluate(
            policy: policy, state: state, facts: facts, config: settings.lockout, nowMs: clock())
        // The core supplies biometryType and domainState; the daemon adds what STATUS also says.
        var extra = Frame(.result, result.extra)
        extra.append(.biometryLocked, bool: state.biometryLocked || !facts.stateReadable)
        extra.append(.passcodeSet, bool: state.passcodeHash != nil)
        result.extra = extra.fields
        return result
    }

    func evaluate(_ options: EvaluateOptions, user: String, caller: PeerCredentials, io: RequestIO) async
        -> LocalAuthProtocol.Result
    {
        var (facts, state, device, prints, session) = await facts(user: user, caller: caller, tty: options.tty)
        let scope = ReuseScope(user: user, service: options.service ?? "", session: session.key)
        facts.lastSuccessMs = lastSuccess[scope]
        let evaluator = PolicyEvaluator(options: options, state: state, facts: facts, config: settings.lockout)
        let (inputs, feed) = AsyncStream.makeStream(of: EvaluationInput.self)
        let id = nextEvaluation
        nextEvaluation += 1
        running[id] = feed
        let deadline = Self.timer(ms: options.timeoutMs) { feed.yield(.policy(.timedOut)) }
        let forwarder = Task {
            for await signal in io.signals {
                switch signal {
                case .cancel: feed.yield(.policy(.cancelled(.userCancel)))
                case .fallback: feed.yield(.policy(.fallbackChosen))
                case .passcode(let passcode): feed.yield(.passcodeTyped(passcode))
                }
            }
        }
        defer {
            running[id] = nil
            deadline.cancel()
            forwarder.cancel()
        }
        let result = await withTaskCancellationHandler {
            await runEvaluation(
                evaluator, inputs: inputs, feed: feed, user: user, scope: scope, device: device,
                prints: prints, io: io)
        } onCancel: {
            feed.yield(.policy(.cancelled(.systemCancel)))
        }
        return result
    }

    /// Audits lockouts as they are set or lifted (the state is about to be persisted).
    private func auditLockoutChanges(user: String, from old: UserAuthState, to new: UserAuthState) {
        if new.biometryLocked != old.biometryLocked {
            audit.lockout(user: user, new.biometryLocked ? "biometry locked" : "biometry unlocked")
        }
        if new.passcodeLockedUntilMs != old.passcodeLockedUntilMs && new.passcodeLockedUntilMs > 0 {
            let seconds = (new.passcodeLockedUntilMs - max(clock(), new.lastSeenMs) + 999) / 1000
            audit.lockout(user: user, "passcode delayed for \(seconds) s after \(new.passcodeFailures) wrong passcodes")
        }
    }

    /// What an evaluation waits for: policy input, or a passcode still to be checked.
    enum EvaluationInput: Sendable {
        case policy(PolicyInput)
        case passcodeTyped(String)
    }

    /// Checks a typed passcode against the current hash, off the actor (yescrypt takes ~20 ms).
    /// During a delay the evaluator refuses any passcode unchecked, so nothing is hashed then.
    private func check(_ passcode: String, evaluator: PolicyEvaluator) async -> PolicyInput {
        guard evaluator.passcodeDelayRemainingMs(nowMs: clock()) <= 0, let hash = evaluator.state.passcodeHash else {
            return .passcodeEntered(correct: false, attemptToken: "")
        }
        return await Task.detached {
            .passcodeEntered(
                correct: PasscodeHasher.verify(passcode, hash: hash),
                attemptToken: PasscodeHasher.attemptToken(passcode, hash: hash))
        }.value
    }

    /// Calls `fire` after `ms` milliseconds unless cancelled first.
    static func timer(ms: Int64, _ fire: @escaping @Sendable () -> Void) -> DeadlineTimer {
        DeadlineTimer(ms: ms, fire)
    }

    /// Starts the evaluator, executes its outputs in order and feeds it inputs until it finishes.
    private func runEvaluation(
        _ evaluator: PolicyEvaluator, inputs: AsyncStream<EvaluationInput>,
        feed: AsyncStream<EvaluationInput>.Continuation, user: String, scope: ReuseScope, device: ReaderDeviceInfo?,
        prints: [StoredPrint], io: RequestIO
    ) async -> LocalAuthProtocol.Result {
        var evaluator = evaluator
        var recorded = evaluator.state  // as on disk
        var outputs = evaluator.start(nowMs: clock())
        var scan: Task<Void, Never>?
        var acceptsPasscode = false
        var result: LocalAuthProtocol.Result?
        defer { scan?.cancel() }
        var pending = inputs.makeAsyncIterator()
        while true {
            for output in outputs {
                switch output {
                case .persist(let newState):
                    auditLockoutChanges(user: user, from: recorded, to: newState)
                    do {
                        try store.saveState(newState, user: user)
                        recorded = newState
                    } catch {
                        // A failure that cannot be recorded must not be forgotten: end the evaluation.
                        audit.notice("cannot record the state of \(user): \(error)")
                        result = Result(.internalError, "The daemon could not record the attempt")
                    }
                case .event(let event):
                    if event.kind == .passcodeNeeded { acceptsPasscode = true }
                    io.send(event)
                case .scanFinger:
                    // "Make sure a scan runs": a retry hint leaves the reader's scan running.
                    if scan == nil {
                        scan = startScan(device: device, prints: prints) { feed.yield(.policy($0)) }
                    }
                case .stopScan:
                    scan?.cancel()
                    scan = nil
                case .requestPasscode:
                    acceptsPasscode = true
                case .recordSuccess:
                    lastSuccess[scope] = clock()
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
            case .fingerMatched, .fingerNotMatched, .readerFailed: scan = nil  // that scan has ended
            default: break
            }
            outputs = evaluator.handle(input, nowMs: clock())
        }
        return result ?? Result(.systemCancel, "The request was cancelled")
    }

    /// Verifies (one print) or identifies (several) on the reader; the outcome becomes policy input.
    private func startScan(
        device: ReaderDeviceInfo?, prints: [StoredPrint], report: @escaping @Sendable (PolicyInput) -> Void
    ) -> Task<Void, Never> {
        let reader = self.reader
        return Task {
            guard let reader, let device, !prints.isEmpty else {
                report(.readerFailed("no fingerprint reader is connected"))
                return
            }
            let progress: @Sendable (ReaderProgress) -> Void = { p in
                if case .retry(let r) = p { report(.fingerRetry(RetryHint(r))) }
            }
            do {
                if prints.count > 1 && device.supportsIdentify {
                    if let index = try await reader.identify(
                        deviceID: device.id, prints: prints.map(\.data), progress: progress)
                    {
                        report(.fingerMatched(finger: prints[index].finger))
                    } else {
                        report(.fingerNotMatched)
                    }
                } else {
                    switch try await reader.verify(deviceID: device.id, print: prints[0].data, progress: progress) {
                    case .match: report(.fingerMatched(finger: prints[0].finger))
                    case .noMatch: report(.fingerNotMatched)
                    }
                }
            } catch ReaderError.cancelled {
                // The evaluation stopped the scan: nothing to report.
            } catch {
                report(.readerFailed(ReaderError.describe(error)))
            }
        }
    }

    /// logind's view of a request, looked up once per request.
    struct CallerSession {
        /// The login session, else the terminal and uid: a reuse window never crosses it.
        let key: String
        /// Biometrics are refused for a remote session (ssh, polkit's agent over ssh).
        let isRemote: Bool
        /// The laptop's lid is closed (asked only when the reader is built in).
        let lidClosed: Bool
    }

    /// The caller's session: sd-login's files first (`sd_pid_get_session`, no round trip); when they
    /// place the caller in no session (a container, a process outside logind's cgroups), logind's
    /// `GetSessionByPID`. With `askLid`, logind's `LidClosed`, else the ACPI lid button. At most one
    /// round trip to the bus for both.
    func logindView(of caller: PeerCredentials, tty: String?, askLid: Bool) async -> CallerSession {
        var fromFiles: (key: String, isRemote: Bool)?
        var name: UnsafeMutablePointer<CChar>?
        if sd_pid_get_session(pid_t(caller.pid), &name) >= 0, let name {
            fromFiles = ("session:" + String(cString: name), sd_session_is_remote(name) > 0)
            free(name)
        }
        let asked =
            fromFiles == nil || askLid
            ? await logind?.ask(sessionOf: fromFiles == nil ? caller.pid : nil, lid: askLid) : nil
        let lidClosed = askLid && (asked?.lidClosed ?? LidSwitch.closed())
        if let fromFiles {
            return CallerSession(key: fromFiles.key, isRemote: fromFiles.isRemote, lidClosed: lidClosed)
        }
        if let found = asked?.session {
            return CallerSession(key: "session:" + found.path, isRemote: found.isRemote, lidClosed: lidClosed)
        }
        return CallerSession(key: "tty:\(tty ?? "none"):uid:\(caller.uid)", isRemote: false, lidClosed: lidClosed)
    }

    func enroll(
        user: String, finger requested: FingerName?, passcodeCapable: Bool, caller: PeerCredentials, io: RequestIO
    ) async -> LocalAuthProtocol.Result {
        guard let reader, let device = await currentDevice() else {
            return Result(.biometryNotAvailable, "No fingerprint reader is connected")
        }
        let all = (try? store.allPrints(user: user)) ?? []
        let onDevice = all.filter { $0.deviceKey == device.storageKey }
        if !caller.isRoot {
            guard !all.isEmpty else {
                return Result(
                    .notAuthorized,
                    "A first finger can only be enrolled by root: sudo localauthctl enroll --user \(user)")
            }
            // Proof of presence is an ordinary LAContext evaluation (an enrolled finger, else the
            // passcode), so its failures count toward the same lockouts as any other.
            let proof = await evaluate(
                EvaluateOptions(
                    policy: .deviceOwnerAuthentication, user: user, service: "localauthctl enroll",
                    reason: "Confirm it is you to add a finger", flags: passcodeCapable ? [.passcodeCapable] : [],
                    tries: 1, timeoutMs: min(settings.enrollTimeoutMs, EvaluateOptions.maxTimeoutMs)),
                user: user, caller: caller, io: io)
            guard proof.isSuccess else {
                return Result(
                    proof.resultCode ?? .authenticationFailed,
                    "Adding a finger needs an enrolled finger or the passcode first: \(proof.message)")
            }
        }
        let taken = Set(onDevice.map(\.finger))
        let finger: FingerName
        if let requested {
            guard !taken.contains(requested.rawValue) else {
                return Result(.alreadyEnrolled, "\(requested.rawValue) is enrolled already; delete it first")
            }
            finger = requested
        } else {
            let order: [FingerName] = [
                .rightIndex, .leftIndex, .rightMiddle, .leftMiddle, .rightThumb, .leftThumb, .rightRing, .leftRing,
                .rightLittle, .leftLittle,
            ]
            guard let free = order.first(where: { !taken.contains($0.rawValue) }) else {
                return Result(.alreadyEnrolled, "All ten fingers are enrolled")
            }
            finger = free
        }
        io.send(Event(.placeFinger, "Place your \(finger.spoken) on the fingerprint reader", finger: finger.rawValue))
        let timeout = settings.enrollTimeoutMs
        let enrolment = Task {
            try await reader.enroll(deviceID: device.id, finger: finger.fingerNumber, username: user) { progress in
                switch progress {
                case .enrollStage(let done, let of):
                    io.send(
                        Event(.enrollStage, "Enrolling: stage \(done) of \(of)", stage: Int64(done), stages: Int64(of)))
                case .retry(let r):
                    let hint = RetryHint(r)
                    io.send(Event(.retry, hint.message, hint: hint))
                case .fingerNeeded:
                    break
                }
            }
        }
        let timer = Self.timer(ms: timeout) { enrolment.cancel() }
        let data: [UInt8]
        do {
            data = try await withTaskCancellationHandler {
                try await enrolment.value
            } onCancel: {
                enrolment.cancel()
            }
            timer.cancel()
        } catch {
            timer.cancel()
            if Task.isCancelled { return Result(.systemCancel, "Enrolment cancelled") }
            if ReaderError.cancelled == error as? ReaderError {
                return Result(.timedOut, "No finger was presented within \(timeout / 1000) s")
            }
            return readerFailure(error)
        }
        do {
            let state = try store.addPrint(
                StoredPrint(finger: finger.rawValue, deviceKey: device.storageKey, data: data, enrolledAtMs: clock()),
                user: user)
            var extra = Frame(.result)
            extra.append(.finger, string: finger.rawValue)
            extra.append(.domainState, bytes: state.domainState)
            return Result(.success, "Enrolled \(finger.spoken) for \(user)", extra: extra.fields)
        } catch {
            audit.notice("cannot store the print of \(user): \(error)")
            return Result(.internalError, "The print could not be stored")
        }
    }

    func list(user: String) async -> LocalAuthProtocol.Result {
        let device = await currentDevice()
        let prints = device != nil ? enrolledPrints(user, on: device) : ((try? store.allPrints(user: user)) ?? [])
        var extra = Frame(.result)
        var seen = Set<String>()
        for p in prints where seen.insert(p.finger).inserted { extra.append(.finger, string: p.finger) }
        let n = seen.count
        return Result(
            .success,
            n == 0 ? "No fingers enrolled for \(user)" : "\(n) finger\(n == 1 ? "" : "s") enrolled for \(user)",
            extra: extra.fields)
    }

    func delete(user: String, finger: FingerName?, all: Bool) async -> LocalAuthProtocol.Result {
        guard all || finger != nil else { return Result(.invalidRequest, "Name a finger or ask for all") }
        let prints = (try? store.allPrints(user: user)) ?? []
        let doomed = prints.filter { all || $0.finger == finger?.rawValue }
        guard !doomed.isEmpty else {
            return Result(
                .notFound, all ? "No fingers enrolled for \(user)" : "\(finger!.rawValue) is not enrolled for \(user)")
        }
        // Prints kept on the reader's own storage go too, best effort: the store is the truth.
        if let reader, let device = await currentDevice(), device.hasStorage {
            for p in doomed where p.deviceKey == device.storageKey {
                try? await reader.deleteStoredPrint(deviceID: device.id, print: p.data)
            }
        }
        do {
            // One write, one new domain state, however many prints go.
            var state = all ? try store.removeAllPrints(user: user) : UserAuthState()
            if !all {
                for p in doomed { state = try store.removePrint(user: user, deviceKey: p.deviceKey, finger: p.finger) }
            }
            var extra = Frame(.result)
            extra.append(.domainState, bytes: state.domainState)
            return Result(
                .success, "Deleted \(doomed.count) print\(doomed.count == 1 ? "" : "s") of \(user)", extra: extra.fields
            )
        } catch {
            audit.notice("cannot delete prints of \(user): \(error)")
            return Result(.internalError, "The prints could not be deleted")
        }
    }

    func setPasscode(user: String, new: String?, old: String?, caller: PeerCredentials) async
        -> LocalAuthProtocol.Result
    {
        var (state, readable, _) = loadState(user)
        guard readable else {
            return Result(.biometryNotAvailable, "The stored state of \(user) is unreadable; ask an administrator")
        }
        if let hash = state.passcodeHash, !caller.isRoot {
            let now = max(clock(), state.lastSeenMs)
            if state.passcodeLockedUntilMs > now {
                return Result(
                    .authenticationFailed,
                    "Passcode locked: try again in \(PasscodeDelay.describe(ms: state.passcodeLockedUntilMs - now))")
            }
            guard let old else { return Result(.authenticationFailed, "The current passcode is needed") }
            let ok = await Task.detached { PasscodeHasher.verify(old, hash: hash) }.value
            guard ok else {
                state.passcodeFailures += 1
                state.lastSeenMs = now
                let delay = PasscodeDelay.schedule(failures: state.passcodeFailures, config: settings.lockout)
                if delay > 0 { state.passcodeLockedUntilMs = now + delay * 1000 }
                try? store.saveState(state, user: user)
                return Result(.authenticationFailed, "The current passcode is wrong")
            }
        }
        if let new {
            if let problem = PasscodeHasher.problem(with: new) {
                return Result(.invalidRequest, problem)
            }
            do {
                state.passcodeHash = try await Task.detached { try PasscodeHasher.hash(new) }.value
            } catch {
                return Result(.internalError, "The passcode could not be hashed")
            }
        } else {
            guard state.passcodeHash != nil else { return Result(.notFound, "\(user) has no passcode") }
            state.passcodeHash = nil
        }
        state.passcodeFailures = 0
        state.passcodeLockedUntilMs = 0
        do {
            try store.saveState(state, user: user)
        } catch {
            return Result(.internalError, "The passcode could not be stored")
        }
        return Result(.success, new == nil ? "Passcode removed for \(user)" : "Passcode set for \(user)")
    }

    func lockoutReset(user: String) -> LocalAuthProtocol.Result {
        do {
            try store.resetState(user: user)
        } catch {
            return Result(.internalError, "The lockout of \(user) could not be reset: \(error)")
        }
        lastSuccess = lastSuccess.filter { $0.key.user != user }
        return Result(.success, "Lockouts and reuse windows of \(user) cleared")
    }

    /// Forgets every reuse window (suspend, administrator's request).
    public func clearReuseWindows() { lastSuccess.removeAll() }

    /// Before system sleep: forget reuse windows, cancel running evaluations (`systemCancel`), and
    /// suspend the reader. A finger given before sleep never counts after it.
    public func prepareForSleep() async {
        clearReuseWindows()
        for feed in running.values { feed.yield(.policy(.cancelled(.systemCancel))) }
        audit.info(
            "system going to sleep: reuse windows cleared, \(running.count) evaluation(s) cancelled, reader suspended")
        await reader?.suspend()
    }

    /// After system resume.
    public func resumedFromSleep() async {
        await reader?.resume()
        audit.info("system resumed: reader resumed")
    }

    func simulate(action: String, argument: String?) async -> LocalAuthProtocol.Result {
        guard let socket = settings.virtualReaderSocket else {
            return Result(.notSupported, "Simulation needs a daemon started with --virtual-reader")
        }
        let command: String
        switch (action, argument) {
        case ("touch", let id?) where Self.isSafeWord(id): command = "SCAN \(id)"
        case ("retry", let code): command = "RETRY \(Int(code ?? "0") ?? 0)"
        case ("error", let code): command = "ERROR \(Int(code ?? "0") ?? 0)"
        case ("unplug", nil): command = "UNPLUG"
        case ("finger-on", nil): command = "FINGER 1"
        case ("finger-off", nil): command = "FINGER 0"
        default:
            return Result(
                .invalidRequest,
                "Unknown simulation '\(action)\(argument.map { " " + $0 } ?? "")'; try touch ID, retry [CODE], error [CODE], unplug, finger-on, finger-off"
            )
        }
        // libfprint's virtual driver listens only while the device is open, and may leave a stale
        // socket file behind when it closes. Opening would queue behind an operation in flight,
        // which holds the device open anyway: so send first, and open only if nobody listens.
        let control = VirtualReaderControl(socketPath: socket)
        let send = { @Sendable () async in
            await Task.detached {
                Swift.Result { () throws(VirtualReaderControl.Failure) in try control.send(command) }
            }
            .value
        }
        var outcome = await send()
        if case .failure(.unreachable) = outcome, let reader, let device = await currentDevice() {
            try? await reader.ensureOpen(deviceID: device.id)
            outcome = await send()
        }
        if case .failure(let error) = outcome {
            return Result(.biometryNotAvailable, "The simulated reader did not take '\(command)': \(error)")
        }
        return Result(.success, "Simulated: \(command)")
    }

    static func isSafeWord(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 64
            && s.utf8.allSatisfy {
                ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D
                    || $0 == 0x5F || $0 == 0x2E
            }
    }

    private func readerFailure(_ error: Error) -> LocalAuthProtocol.Result {
        Result(.biometryNotAvailable, "The fingerprint reader failed: \(ReaderError.describe(error))")
    }
}

extension RetryHint {
    init(_ retry: ReaderRetry) {
        switch retry {
        case .general: self = .general
        case .tooShort: self = .tooShort
        case .centerFinger: self = .centerFinger
        case .removeFinger: self = .removeFinger
        }
    }
}

extension FingerName {
    /// libfprint's `FpFinger` value: left thumb 1 … right little 10.
    var fingerNumber: Int { FingerName.allCases.firstIndex(of: self)! + 1 }
}

extension ReaderError {
    static func describe(_ error: Error) -> String {
        guard let e = error as? ReaderError else { return "\(error)" }
        switch e {
        case .noDevice: return "no fingerprint reader is connected"
        case .removed: return "the fingerprint reader was unplugged"
        case .busy: return "the fingerprint reader is busy"
        case .cancelled: return "cancelled"
        case .dataInvalid: return "the stored print does not fit this reader"
        case .dataNotFound: return "the print is not on the reader"
        case .dataFull: return "the reader's storage is full"
        case .notSupported: return "the reader cannot do this"
        case .failed(let why): return why
        }
    }
}
