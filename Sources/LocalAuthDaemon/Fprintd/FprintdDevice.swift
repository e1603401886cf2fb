// SPDX-License-Identifier: Apache-2.0
import Dispatch
import FingerprintReader
import LocalAuthProtocol
import LocalAuthStore
import LocalAuthSystemd
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What the door asks of the daemon: the socket's own entry point, so every D-Bus request meets the
/// same authorisation, store, reader queue, lockouts and audit as a request on the socket.
protocol FprintdBackend: Sendable {
    func handle(_ request: Request, caller: PeerCredentials, io: RequestIO, door: DoorContext) async
        -> RequestResult
}

extension Daemon: FprintdBackend {}

/// One reader as fprintd's `net.reactivated.Fprint.Device`: claim, verify, enrol, list and delete,
/// with fprintd's state machine (`src/device.c`: one claimer, one action at a time, an action stays
/// until its Stop) and its error names. Lives on the bus queue; daemon work runs in tasks whose
/// results come back to the queue.
final class FprintdDevice: @unchecked Sendable {
    enum ActionKind: Equatable {
        case none, verify, enroll, delete, list
    }

    /// The claim: who holds the device and for which account.
    struct Session {
        let sender: String
        let user: String
        let caller: PeerCredentials
    }

    let index: Int
    let path: String
    let reader: ReaderDeviceInfo
    private let bus: BusConnection
    private let polkit: Polkit
    private let backend: FprintdBackend
    /// The reader layer, held open while the device is claimed (fprintd opens it on Claim).
    private let readers: FingerprintReader?
    private var holding = false
    /// A Release is closing the reader.
    private var closing = false
    private let audit: AuditLog
    private(set) var session: Session?
    private(set) var action: ActionKind = .none
    /// The daemon request of the current verify or enrol, and how to stop it.
    private var running: Task<Void, Never>?
    private var stopRunning: (() -> Void)?
    /// Set when the door itself stopped the running request (Stop, Release, the claimer left).
    private final class StopFlag: @unchecked Sendable { var value = false }
    /// The VerifyStop / EnrollStop / Release waiting for the running request to end and, after a
    /// verification, for the reader to finish its scan.
    private var stopCalls: [BusCall] = []
    /// The reader scans of a verification: after its status the reader may still be finishing the
    /// last one (until the finger lifts, at most `EvaluationRun.finishGraceMs`), and fprintd's
    /// VerifyStop waits for that.
    private final class Scans: Sendable {
        private let tasks = Mutex<[Task<Void, Never>]>([])
        func add(_ task: Task<Void, Never>) { tasks.withLock { $0.append(task) } }
        func cancel() { for task in tasks.withLock({ $0 }) { task.cancel() } }
        func ended() async { for task in tasks.withLock({ $0 }) { await task.value } }
    }
    private var scans: Scans?
    /// Verifications whose reader scans have not all ended.
    private var scanning = 0
    private var statusReported = false
    /// Counts starts and stops: a start whose preparation (the daemon's list, canEvaluate, the
    /// replaced print) outlived a Stop or Release of the same action does not begin.
    private var startGeneration = 0
    var fingerPresent = false
    var fingerNeeded = false
    var enrollStages: Int
    var isSwipe: Bool

    init(
        index: Int, reader: ReaderDeviceInfo, bus: BusConnection, polkit: Polkit, backend: FprintdBackend,
        readers: FingerprintReader?, audit: AuditLog
    ) {
        self.readers = readers
        self.index = index
        self.path = Fprintd.devicePath(index)
        self.reader = reader
        self.bus = bus
        self.polkit = polkit
        self.backend = backend
        self.audit = audit
        self.enrollStages = Self.stages(reader.enrollStages, identify: reader.supportsIdentify)
        self.isSwipe = reader.isSwipe
    }

    var interface: BusInterface {
        BusInterface(
            name: Fprintd.deviceInterface,
            methods: [
                .init(member: "ListEnrolledFingers", signature: "s", result: "as"),
                .init(member: "DeleteEnrolledFingers", signature: "s", result: ""),
                .init(member: "DeleteEnrolledFingers2", signature: "", result: ""),
                .init(member: "DeleteEnrolledFinger", signature: "s", result: ""),
                .init(member: "Claim", signature: "s", result: ""),
                .init(member: "Release", signature: "", result: ""),
                .init(member: "VerifyStart", signature: "s", result: ""),
                .init(member: "VerifyStop", signature: "", result: ""),
                .init(member: "EnrollStart", signature: "s", result: ""),
                .init(member: "EnrollStop", signature: "", result: ""),
            ],
            signals: [
                .init(member: "VerifyFingerSelected", signature: "s"),
                .init(member: "VerifyStatus", signature: "sb"),
                .init(member: "EnrollStatus", signature: "sb"),
            ],
            properties: [
                .init(member: "name", signature: "s"),
                .init(member: "num-enroll-stages", signature: "i"),
                .init(member: "scan-type", signature: "s"),
                .init(member: "finger-present", signature: "b"),
                .init(member: "finger-needed", signature: "b"),
            ],
            handle: { [unowned self] call in self.receive(call) },
            property: { [unowned self] name in self.property(name) })
    }

    /// fprintd's `num-enroll-stages`: the reader's stages, and one more for the duplicate check on a
    /// reader that can identify.
    static func stages(_ readerStages: Int, identify: Bool) -> Int { readerStages + (identify ? 1 : 0) }

    func property(_ name: String) -> BusValue? {
        switch name {
        case "name": .string(reader.name)
        case "num-enroll-stages": .int32(Int32(clamping: enrollStages))
        case "scan-type": .string(isSwipe ? "swipe" : "press")
        case "finger-present": .bool(fingerPresent)
        case "finger-needed": .bool(fingerNeeded)
        default: nil
        }
    }

    /// The reader reported a new finger status or stage count: updates the properties, tells listeners.
    func update(
        fingerPresent present: Bool? = nil, fingerNeeded needed: Bool? = nil, enrollStages stages: Int? = nil,
        isSwipe swipe: Bool? = nil
    ) {
        var changed: [String] = []
        if let swipe, swipe != isSwipe {
            isSwipe = swipe
            changed.append("scan-type")
        }
        if let present, present != fingerPresent {
            fingerPresent = present
            changed.append("finger-present")
        }
        if let needed, needed != fingerNeeded {
            fingerNeeded = needed
            changed.append("finger-needed")
        }
        if let stages = stages.map({ Self.stages($0, identify: reader.supportsIdentify) }), stages != enrollStages {
            enrollStages = stages
            changed.append("num-enroll-stages")
        }
        bus.emitPropertiesChanged(path: path, interface: Fprintd.deviceInterface, names: changed)
    }

    // MARK: Calls

    /// Which claim a method needs (fprintd's `get_claim_state_for_invocation`).
    private enum ClaimNeed {
        case unclaimed, claimed, autoClaim, anytime
    }

    private static func claimNeed(_ member: String) -> ClaimNeed {
        switch member {
        case "Claim": .unclaimed
        case "DeleteEnrolledFingers": .autoClaim
        case "ListEnrolledFingers": .anytime
        default: .claimed
        }
    }

    /// The polkit actions of which one must allow the method (fprintd's `get_permissions_for_invocation`,
    /// in its priority order).
    static func actions(for member: String) -> [Fprintd.Action] {
        switch member {
        case "Claim": [.verify, .enroll]
        case "DeleteEnrolledFinger", "DeleteEnrolledFingers", "DeleteEnrolledFingers2", "EnrollStart": [.enroll]
        case "ListEnrolledFingers", "VerifyStart": [.verify]
        default: []
        }
    }

    /// fprintd's `_fprint_device_check_claimed`.
    private func claimProblem(_ call: BusCall) -> BusError? {
        var need = Self.claimNeed(call.member)
        if need == .anytime { return nil }
        if need == .autoClaim { need = session == nil ? .unclaimed : .claimed }
        if need == .unclaimed {
            return session == nil ? nil : Fprintd.ErrorName.alreadyInUse("Device was already claimed")
        }
        guard let session else { return Fprintd.ErrorName.claimDevice("Device was not claimed before use") }
        return session.sender == call.sender && !closing
            ? nil : Fprintd.ErrorName.alreadyInUse("Device already in use by another user")
    }

    /// Every method call: the claim, the account, polkit, then the method (fprintd's
    /// `action_authorization_handler` followed by the handler, which checks the claim again).
    func receive(_ call: BusCall) {
        audit.debug("D-Bus client \(call.sender) calls \(call.member) on \(path)")
        if let problem = claimProblem(call) {
            refuse(call, problem)
            return
        }
        guard let (uid, pid) = call.senderCredentials() else {
            refuse(call, Fprintd.ErrorName.internal("Could not get connection unix user ID"))
            return
        }
        guard let own = PeerCredentials.userName(of: uid) else {
            refuse(call, Fprintd.ErrorName.internal("Failed to get information about user UID \(uid)"))
            return
        }
        // Pinned now, as the socket pins at accept: the bus daemon's pid is the process that
        // connected to the bus; a setuid-root caller is counted under its real uid (issue 13, M2, L4).
        let caller = PeerCredentials(
            pid: pid, uid: uid, gid: Self.primaryGroup(of: uid), userName: own,
            process: PeerProcess(pid: pid, pidfd: -1))
        var user: String?
        if ["Claim", "DeleteEnrolledFingers", "ListEnrolledFingers"].contains(call.member) {
            let requested = call.string(0) ?? ""
            user = requested.isEmpty ? own : requested
        }
        let needsOtherUser = user.map { $0 != own } ?? false
        // The daemon's rule before polkit's: a user acts only for their own account, so polkit is not
        // even asked (no administrator's password dialog for a request that is refused anyway).
        if needsOtherUser, let user,
            case .refused(let why) = Authorization.decide(.list, caller: caller, target: user)
        {
            return refuse(call, Fprintd.ErrorName.permissionDenied("Not Authorized: \(why)"))
        }
        authorize(call, sender: call.sender, actions: needsOtherUser ? [.setUsername] : []) { [self] setUsername in
            guard setUsername != nil else { return }
            authorize(call, sender: call.sender, actions: Self.actions(for: call.member)) { [self] answer in
                guard let answer else { return }
                if let problem = claimProblem(call) {
                    refuse(call, problem)
                    return
                }
                perform(call, caller: caller, user: user, enrollAnswer: answer)
            }
        }
    }

    /// Asks polkit for each of `actions` in turn until one allows; `then(answer)` with the allowing
    /// answer, or (after the call was refused with PermissionDenied) nil. No actions: allowed at once.
    private func authorize(
        _ call: BusCall, sender: String, actions: [Fprintd.Action], then: @escaping (PolkitAnswer?) -> Void
    ) {
        guard let action = actions.first else {
            then(PolkitAnswer(isAuthorized: true, isChallenge: false, details: [:]))
            return
        }
        polkit.check(sender: sender, action: action.rawValue) { [self] result in
            switch result {
            case .success(let answer) where answer.isAuthorized:
                then(answer)
            case .success:
                if actions.count > 1 {
                    authorize(call, sender: sender, actions: Array(actions.dropFirst()), then: then)
                } else {
                    refuse(call, Fprintd.ErrorName.permissionDenied("Not Authorized: \(action.rawValue)"))
                    then(nil)
                }
            case .failure(let error):
                if actions.count > 1 {
                    authorize(call, sender: sender, actions: Array(actions.dropFirst()), then: then)
                } else {
                    refuse(call, Fprintd.ErrorName.permissionDenied("Not Authorized: \(error.message)"))
                    then(nil)
                }
            }
        }
    }

    private func refuse(_ call: BusCall, _ error: BusError) {
        if error.name == Fprintd.ErrorName.permissionDenied.rawValue {
            audit.notice("D-Bus \(call.member) on \(path) refused to \(call.sender): \(error.message)")
        }
        call.fail(error)
    }

    /// This device's requests to the daemon: on its reader, named as the D-Bus door in the audit.
    private func door(finger: FingerName? = nil, presence: DoorContext.Presence? = nil) -> DoorContext {
        DoorContext(readerID: reader.id, finger: finger, presence: presence, name: "dbus")
    }

    private func perform(_ call: BusCall, caller: PeerCredentials, user: String?, enrollAnswer: PolkitAnswer) {
        audit.debug(
            "\(path): \(call.member) of \(call.sender) authorised; action \(action), running \(running != nil), scanning \(scanning)"
        )
        switch call.member {
        case "Claim": claim(call, caller: caller, user: user!)
        case "Release": release(call)
        case "VerifyStart": verifyStart(call, finger: Fprintd.FingerArgument(call.string(0) ?? ""))
        case "VerifyStop": stop(call, kind: .verify)
        case "EnrollStart":
            enrollStart(call, finger: Fprintd.FingerArgument(call.string(0) ?? ""), polkit: enrollAnswer)
        case "EnrollStop": stop(call, kind: .enroll)
        case "ListEnrolledFingers": list(call, caller: caller, user: user!)
        case "DeleteEnrolledFinger": deleteOne(call, finger: Fprintd.FingerArgument(call.string(0) ?? ""))
        case "DeleteEnrolledFingers2":
            guard let session else { return refuse(call, Fprintd.ErrorName.claimDevice("Device was not claimed")) }
            delete(call, caller: session.caller, user: session.user, finger: nil)
        case "DeleteEnrolledFingers": delete(call, caller: caller, user: user!, finger: nil)
        default: call.fail(BusError(name: "org.freedesktop.DBus.Error.UnknownMethod", message: call.member))
        }
    }

    /// fprintd's `can_start_action`.
    private func busyProblem() -> BusError? {
        switch action {
        case .none: nil
        case .enroll: Fprintd.ErrorName.alreadyInUse("Enrollment already in progress")
        case .verify: Fprintd.ErrorName.alreadyInUse("Verification already in progress")
        case .delete: Fprintd.ErrorName.alreadyInUse("Delete already in progress")
        case .list: Fprintd.ErrorName.alreadyInUse("Another operation is already in progress")
        }
    }

    private func claim(_ call: BusCall, caller: PeerCredentials, user: String) {
        guard EnrollmentStore.isValidUserName(user) else {
            return refuse(call, Fprintd.ErrorName.internal("Not a valid user name (\(user.utf8.count) bytes)"))
        }
        // The daemon's own rule first: a user acts only for their own account, whatever polkit said.
        if case .refused(let why) = Authorization.decide(.evaluate, caller: caller, target: user) {
            return refuse(call, Fprintd.ErrorName.permissionDenied("Not Authorized: \(why)"))
        }
        let session = Session(sender: call.sender, user: user, caller: caller)
        self.session = session
        audit.debug("D-Bus client \(call.sender) (\(caller)) claimed \(path) for \(user)")
        // fprintd opens the reader on Claim and keeps it open until Release; so do we.
        guard let readers, !holding else { return call.reply() }
        holding = true
        let id = reader.id
        Task {
            var failure: ReaderError?
            do throws(ReaderError) { try await readers.hold(deviceID: id) } catch { failure = error }
            let opened = failure
            self.bus.queue.async {
                guard let opened else { return call.reply() }
                self.letGo()
                if self.session?.sender == session.sender { self.endSession() }
                call.fail(Fprintd.ErrorName.internal("Open failed with error: \(ReaderError.describe(opened))"))
            }
        }
    }

    /// Lets the reader close again after a claim.
    private func letGo() {
        guard holding else { return }
        holding = false
        readers?.releaseHold(deviceID: reader.id)
    }

    private func release(_ call: BusCall) {
        // Release stops the action at once, also a scan the reader is still finishing.
        scans?.cancel()
        if running != nil || !stopCalls.isEmpty {
            stopCalls.append(call)
            stopRunning?()
            return
        }
        if holding, !unplugged, let readers {
            // fprintd closes the reader on Release and answers with the close's error; a second
            // Release meanwhile is AlreadyInUse.
            holding = false
            closing = true
            let id = reader.id
            Task {
                var failure: ReaderError?
                do throws(ReaderError) { try await readers.releaseHoldAndClose(deviceID: id) } catch { failure = error }
                let closeError = failure
                self.bus.queue.async {
                    self.closing = false
                    self.endSession()
                    guard let closeError else { return call.reply() }
                    call.fail(
                        Fprintd.ErrorName.internal("Release failed with error: \(ReaderError.describe(closeError))"))
                }
            }
            return
        }
        endSession()
        if unplugged {
            // As fprintd: the claimer learns the reader is gone, then the device leaves the bus.
            call.fail(
                Fprintd.ErrorName.internal("Release failed with error: \(ReaderError.describe(ReaderError.removed))"))
            gone?()
        } else {
            call.reply()
        }
    }

    /// Set when the reader was unplugged while claimed: the device stays on the bus until Release.
    private(set) var unplugged = false
    /// Called once an unplugged device's claim ends (the service then unexports it).
    var gone: (() -> Void)?

    /// The reader went away. Unclaimed: true (remove the device now). Claimed: the device stays
    /// until its claimer releases it, as fprintd keeps it; its running request ends by itself.
    func readerRemoved() -> Bool {
        guard session != nil else { return true }
        unplugged = true
        return false
    }

    private func endSession() {
        session = nil
        action = .none
        statusReported = false
        startGeneration += 1
        letGo()
    }

    /// The claimer left the bus: stop what it started and release the device.
    func clientVanished(_ name: String) {
        guard session?.sender == name else { return }
        stopRunning?()
        scans?.cancel()
        if running == nil { endSession() } else { session = nil }
        if unplugged { gone?() }
    }

    // MARK: Verify

    private func verifyStart(_ call: BusCall, finger: Fprintd.FingerArgument) {
        guard let session else { return refuse(call, Fprintd.ErrorName.claimDevice("Device was not claimed")) }
        if let problem = busyProblem() { return refuse(call, problem) }
        action = .verify
        statusReported = false
        startGeneration += 1
        let generation = startGeneration
        let backend = self.backend
        Task {
            let listed = await backend.handle(
                .list(user: session.user), caller: session.caller, io: .silent, door: self.door())
            let can = await backend.handle(
                .canEvaluate(policy: .deviceOwnerAuthenticationWithBiometrics, user: session.user),
                caller: session.caller, io: .silent, door: self.door(finger: finger.name))
            self.bus.queue.async {
                guard self.startGeneration == generation, self.action == .verify else {
                    return call.fail(Fprintd.ErrorName.internal("The verification was stopped before it began"))
                }
                self.verifyPrepared(call, session: session, finger: finger, listed: listed, can: can)
            }
        }
    }

    private func verifyPrepared(
        _ call: BusCall, session: Session, finger: Fprintd.FingerArgument, listed: RequestResult,
        can: RequestResult
    ) {
        let fingers = listed.isSuccess ? listed.fields.strings(.finger) : []
        func fail(_ error: BusError) {
            action = .none
            refuse(call, error)
        }
        guard self.session?.sender == session.sender else {
            return fail(Fprintd.ErrorName.claimDevice("Device was released"))
        }
        if !listed.isSuccess && listed.resultCode == .notAuthorized {
            return fail(Fprintd.ErrorName.permissionDenied("Not Authorized: \(listed.message)"))
        }
        let selected: String
        switch finger {
        case .any, .invalid:
            guard !fingers.isEmpty else { return fail(Fprintd.ErrorName.noEnrolledPrints("No fingerprints enrolled")) }
            selected = fingers.count == 1 ? fingers[0] : (reader.supportsIdentify ? "any" : fingers[0])
        case .finger(let name):
            guard fingers.contains(name.rawValue) else {
                return fail(Fprintd.ErrorName.noEnrolledPrints("No such print \(name.fingerNumber)"))
            }
            selected = name.rawValue
        }
        switch can.resultCode {
        case .success: break
        case .biometryNotEnrolled: return fail(Fprintd.ErrorName.noEnrolledPrints("No fingerprints enrolled"))
        default: return fail(Fprintd.ErrorName.permissionDenied("Not Authorized: \(can.message)"))
        }
        call.reply()
        bus.emitSignal(
            path: path, interface: Fprintd.deviceInterface, member: "VerifyFingerSelected", [.string(selected)])
        startVerification(session, finger: finger.name)
    }

    private func startVerification(_ session: Session, finger: FingerName?) {
        audit.debug("\(path): verification for \(session.user) starts")
        let (signals, feed) = AsyncStream.makeStream(of: ClientSignal.self)
        let bus = self.bus
        let scans = Scans()
        self.scans = scans
        scanning += 1
        let io = RequestIO(
            send: { [self] event in
                guard event.kind == .retry else { return }
                bus.queue.async { self.emitStatus("VerifyStatus", Fprintd.verifyRetryName(event.hint), done: false) }
            }, signals: signals, scanStarted: scans.add)
        let options = EvaluateOptions(
            policy: .deviceOwnerAuthenticationWithBiometrics, user: session.user, service: "fprintd-compat",
            tries: 1, timeoutMs: EvaluateOptions.maxTimeoutMs)
        let backend = self.backend
        let door = self.door(finger: finger)
        let stopped = StopFlag()
        stopRunning = {
            stopped.value = true
            feed.yield(.cancel)
        }
        running = Task {
            var result: RequestResult
            repeat {
                // fprintd's verify waits for a finger until stopped: a daemon timeout starts a new one.
                result = await backend.handle(.evaluate(options), caller: session.caller, io: io, door: door)
            } while result.resultCode == .timedOut && !Task.isCancelled
            let final = result
            bus.queue.async { self.finished(kind: .verify, result: final, stopped: stopped.value) }
            await scans.ended()
            bus.queue.async { self.readerFinished(scans) }
        }
    }

    /// A verification's reader scans have all ended: the Stop or Release that waited for them.
    private func readerFinished(_ ended: Scans) {
        scanning -= 1
        if scans === ended { scans = nil }
        answerStops()
    }

    // MARK: Enrol

    private func enrollStart(_ call: BusCall, finger: Fprintd.FingerArgument, polkit: PolkitAnswer) {
        guard let session else { return refuse(call, Fprintd.ErrorName.claimDevice("Device was not claimed")) }
        guard case .finger(let name) = finger else {
            return refuse(call, Fprintd.ErrorName.invalidFingername("Invalid finger name"))
        }
        if let problem = busyProblem() { return refuse(call, problem) }
        // Root may enrol any account's finger, as on the socket. A user's own enrolment needs proof
        // that the person at the machine knows the account password: polkit's kept authorisation,
        // which only a password typed into the authentication agent for this caller creates.
        let presence: DoorContext.Presence?
        if session.caller.isRoot {
            presence = nil
        } else {
            guard polkit.provesAuthentication, let id = polkit.details["polkit.temporary_authorization_id"] else {
                return refuse(
                    call,
                    Fprintd.ErrorName.permissionDenied(
                        "Not Authorized: adding a finger needs the account password typed in the authentication dialog, and polkit allowed \(Fprintd.Action.enroll.rawValue) without one"
                    ))
            }
            presence = .polkitAuthentication(temporaryAuthorization: id)
        }
        action = .enroll
        statusReported = false
        startGeneration += 1
        let generation = startGeneration
        let backend = self.backend
        Task {
            // fprintd replaces a finger enrolled again: the old print goes first.
            let listed = await backend.handle(
                .list(user: session.user), caller: session.caller, io: .silent, door: self.door())
            let replaced: RequestResult? =
                listed.fields.strings(.finger).contains(name.rawValue)
                ? await backend.handle(
                    .delete(user: session.user, finger: name, all: false), caller: session.caller, io: .silent,
                    door: self.door()) : nil
            self.bus.queue.async {
                guard self.startGeneration == generation, self.action == .enroll else {
                    return call.fail(Fprintd.ErrorName.internal("The enrolment was stopped before it began"))
                }
                guard self.session?.sender == session.sender else {
                    self.action = .none
                    return self.refuse(call, Fprintd.ErrorName.claimDevice("Device was released"))
                }
                if let replaced, !replaced.isSuccess {
                    self.action = .none
                    return self.refuse(call, Self.error(for: replaced))
                }
                call.reply()
                self.startEnrolment(session, finger: name, presence: presence)
            }
        }
    }

    private func startEnrolment(_ session: Session, finger: FingerName, presence: DoorContext.Presence?) {
        let (signals, feed) = AsyncStream.makeStream(of: ClientSignal.self)
        let bus = self.bus
        let io = RequestIO(
            send: { [self] event in
                bus.queue.async { self.enrollEvent(event) }
            }, signals: signals)
        let backend = self.backend
        let stopped = StopFlag()
        var door = self.door(presence: presence)
        door.refuseDuplicates = true
        let enrolment = Task {
            await backend.handle(
                .enroll(user: session.user, finger: finger), caller: session.caller, io: io, door: door)
        }
        stopRunning = {
            stopped.value = true
            feed.yield(.cancel)
            enrolment.cancel()
        }
        running = Task {
            let result = await enrolment.value
            bus.queue.async { self.finished(kind: .enroll, result: result, stopped: stopped.value) }
        }
    }

    private func enrollEvent(_ event: Event) {
        guard action == .enroll, !statusReported else { return }
        switch event.kind {
        case .enrollStage:
            // The last stage is reported by the completion; the count is the device's as it is now
            // (it may change while an enrolment runs), as fprintd compares.
            if let stage = event.stage, stage < Int64(enrollStages) {
                emitStatus("EnrollStatus", "enroll-stage-passed", done: false)
            }
        case .retry:
            emitStatus("EnrollStatus", Fprintd.enrollRetryName(event.hint), done: false)
        default:
            break
        }
    }

    // MARK: Stop

    /// VerifyStop / EnrollStop (fprintd's `can_stop_action` and `stoppable_action_stop`).
    private func stop(_ call: BusCall, kind: ActionKind) {
        guard action == kind, stopCalls.isEmpty else {
            if action != .none || !stopCalls.isEmpty {
                return refuse(call, Fprintd.ErrorName.alreadyInUse("Another operation is already in progress"))
            }
            return refuse(
                call,
                Fprintd.ErrorName.noActionInProgress(
                    kind == .enroll ? "No enrollment in progress" : "No verification in progress"))
        }
        if running != nil || scanning > 0 {
            // Before the status the request is stopped; after it, the reader gets its moment to
            // finish the scan (fprintd's VERIFY_STOP_DEVICE_WAIT) before the answer.
            stopCalls.append(call)
            stopRunning?()
            return
        }
        action = .none
        statusReported = false
        startGeneration += 1
        call.reply()
    }

    /// A verify or enrol request ended: its final status (unless one was reported), then any Stop or
    /// Release that waited for it.
    private func finished(kind: ActionKind, result: RequestResult, stopped: Bool) {
        let code = result.resultCode.map { "\($0)" } ?? "code \(result.code)"
        audit.debug("\(path): \(kind) ended: \(code) \(result.message)\(stopped ? " (stopped)" : "")")
        running = nil
        stopRunning = nil
        // The reader's own word comes before libfprint's hot-plug event: the claim ends as unplugged.
        if Fprintd.says(result, .removed) { unplugged = true }
        if !statusReported {
            if kind == .verify {
                emitStatus("VerifyStatus", stopped ? "verify-no-match" : Fprintd.verifyResultName(result), done: true)
            } else {
                emitStatus("EnrollStatus", stopped ? "enroll-failed" : Fprintd.enrollResultName(result), done: true)
            }
        }
        answerStops()
        if session == nil { endSession() }
    }

    /// Answers the Stop and Release calls that waited, once the request has ended and the reader
    /// has finished its scans (fprintd's VerifyStop lets a reader that reported finish).
    private func answerStops() {
        guard running == nil, scanning == 0, !stopCalls.isEmpty else { return }
        let waiting = stopCalls
        stopCalls = []
        action = .none
        statusReported = false
        for call in waiting {
            if call.member == "Release" { endSession() }
            call.reply()
        }
    }

    private func emitStatus(_ signal: String, _ name: String, done: Bool) {
        guard !(statusReported && done) else { return }
        if done { statusReported = true }
        bus.emitSignal(path: path, interface: Fprintd.deviceInterface, member: signal, [.string(name), .bool(done)])
    }

    // MARK: List and delete

    private func list(_ call: BusCall, caller: PeerCredentials, user: String) {
        let backend = self.backend
        Task {
            let result = await backend.handle(.list(user: user), caller: caller, io: .silent, door: self.door())
            self.bus.queue.async {
                guard result.isSuccess else {
                    return self.refuse(call, Self.error(for: result))
                }
                let fingers = result.fields.strings(.finger)
                guard !fingers.isEmpty else {
                    return call.fail(Fprintd.ErrorName.noEnrolledPrints("Failed to discover prints"))
                }
                call.reply([.strings(fingers)])
            }
        }
    }

    private func deleteOne(_ call: BusCall, finger: Fprintd.FingerArgument) {
        guard let session else { return refuse(call, Fprintd.ErrorName.claimDevice("Device was not claimed")) }
        guard case .finger(let name) = finger else {
            return refuse(call, Fprintd.ErrorName.invalidFingername("Invalid finger name"))
        }
        delete(call, caller: session.caller, user: session.user, finger: name)
    }

    /// Deletes that arrive while one runs wait for it (fprintd answers them one after the other).
    private var waitingDeletes: [() -> Void] = []

    private func delete(_ call: BusCall, caller: PeerCredentials, user: String, finger: FingerName?) {
        if action == .delete {
            waitingDeletes.append { [self] in delete(call, caller: caller, user: user, finger: finger) }
            return
        }
        if let problem = busyProblem() { return refuse(call, problem) }
        action = .delete
        let backend = self.backend
        Task {
            let result = await backend.handle(
                .delete(user: user, finger: finger, all: finger == nil), caller: caller, io: .silent, door: self.door())
            self.bus.queue.async {
                self.action = .none
                defer {
                    if !self.waitingDeletes.isEmpty { self.waitingDeletes.removeFirst()() }
                }
                switch result.resultCode {
                case .success: call.reply()
                case .notFound:
                    call.fail(
                        Fprintd.ErrorName.noEnrolledPrints(
                            finger.map { "Fingerprint for finger \($0.rawValue) is not enrolled" }
                                ?? "No fingerprint enrolled"))
                case .internalError:
                    call.fail(
                        Fprintd.ErrorName.printsNotDeleted(
                            "Impossible to delete fingerprint reference: \(result.message)"))
                default: self.refuse(call, Self.error(for: result))
                }
            }
        }
    }

    /// A refusal of the daemon as fprintd's error.
    static func error(for result: RequestResult) -> BusError {
        switch result.resultCode {
        case .notAuthorized: Fprintd.ErrorName.permissionDenied("Not Authorized: \(result.message)")
        case .biometryNotEnrolled, .notFound: Fprintd.ErrorName.noEnrolledPrints(result.message)
        default: Fprintd.ErrorName.internal(result.message)
        }
    }

    /// The account's primary group (`getpwuid_r`): D-Bus tells the uid only.
    static func primaryGroup(of uid: UInt32) -> UInt32 {
        var pwd = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &pwd, &buffer, buffer.count, &result) == 0, result != nil else { return UInt32.max }
        return pwd.pw_gid
    }
}
