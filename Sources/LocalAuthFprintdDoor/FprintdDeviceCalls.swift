// SPDX-License-Identifier: Apache-2.0
import Dispatch
import LocalAuthDaemon
import LocalAuthProtocol
import LocalAuthSystemd
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// `FprintdDevice`'s D-Bus calls: each one checked against the claim and polkit, then Claim and
/// Release, and the calls that need no reader (ListEnrolledFingers, DeleteEnrolledFinger(s)).
extension FprintdDevice {
    // MARK: Calls

    /// fprintd's `_fprint_device_check_claimed`.
    func claimProblem(_ call: BusCall) -> BusError? {
        var need = Self.method(call.member)?.claim ?? .claimed
        if need == .anytime { return nil }
        if need == .autoClaim { need = session == nil ? .unclaimed : .claimed }
        if need == .unclaimed {
            return session == nil ? nil : Fprintd.ErrorName.alreadyInUse("Device was already claimed")
        }
        guard let session else { return Fprintd.ErrorName.claimDevice("Device was not claimed before use") }
        return session.sender == call.sender && !closing
            ? nil : Fprintd.ErrorName.alreadyInUse("Device already in use by another user")
    }

    /// Every method call: the claim, the caller (`lookUp`, once per sender), the caller's turn
    /// (`FprintdGate`), polkit, then the method (fprintd's `action_authorization_handler` followed by the
    /// handler, which checks the claim again).
    func receive(_ call: BusCall) {
        audit.debug("D-Bus client \(call.sender) calls \(call.member) on \(path)")
        if let problem = claimProblem(call) {
            refuse(call, problem)
            return
        }
        if let caller = knownCallers[call.sender] { return arrived(call, caller: caller) }
        if lookups[call.sender] != nil {
            lookups[call.sender]!.append(call)  // after the calls before it, in order
            return
        }
        lookups[call.sender] = [call]
        lookUp(call.sender, asking: call)
    }

    /// Finds `sender`'s caller without holding the queue: the bus daemon's answer (asynchronous,
    /// `BusCall.lookUpSender`), then its account and process off the queue; then its waiting calls go on.
    func lookUp(_ sender: String, asking call: BusCall) {
        let stated = { [self] (stated: (uid: UInt32, pid: Int32)?) in
            guard let stated else { return looked(sender, .noCredentials) }
            if !sender.isEmpty, knownSenders.count < Self.knownSendersLimit { knownSenders[sender] = stated }
            let queue = bus.queue
            DispatchQueue.global().async {
                let found = Self.caller(uid: stated.uid, pid: stated.pid)
                queue.async { self.looked(sender, found) }
            }
        }
        if let known = knownSenders[sender] { return stated(known) }
        call.lookUpSender(stated)
    }

    /// A sender's caller is known (or cannot be): its calls that waited go on, in order. Nothing when
    /// the sender left the bus meanwhile (`clientVanished` answered them).
    func looked(_ sender: String, _ lookup: Lookup) {
        guard let calls = lookups.removeValue(forKey: sender) else { return }
        switch lookup {
        case .found(let caller):
            if !sender.isEmpty, knownCallers.count < Self.knownSendersLimit { knownCallers[sender] = caller }
            for call in calls { arrived(call, caller: caller) }
        case .noCredentials:
            for call in calls { refuse(call, Fprintd.ErrorName.internal("Could not get connection unix user ID")) }
        case .noAccount(let uid):
            for call in calls {
                refuse(call, Fprintd.ErrorName.internal("Failed to get information about user UID \(uid)"))
            }
        }
    }

    /// A call whose caller is known: a Claim is followed from now, then the caller's turn.
    func arrived(_ call: BusCall, caller: PeerCredentials) {
        let own = caller.userName ?? ""
        if call.member == "Claim" {
            // Followed from now: a claimer that leaves the bus before its Claim is answered claims nothing.
            let sender = call.sender
            claimsInFlight[sender, default: 0] += 1
            call.whenAnswered { [self] in
                claimsInFlight[sender, default: 1] -= 1
                guard claimsInFlight[sender] == 0 else { return }
                claimsInFlight[sender] = nil
                vanishedClaimers.remove(sender)
            }
        }
        gate.admit(call, caller: caller) { [self] in admitted(call, caller: caller, own: own) }
    }

    /// A call that has its turn: the account it names, polkit, then the method.
    func admitted(_ call: BusCall, caller: PeerCredentials, own: String) {
        guard let method = Self.method(call.member) else {
            return call.fail(BusError(name: "org.freedesktop.DBus.Error.UnknownMethod", message: call.member))
        }
        var user: String?
        if method.account != nil {
            let requested = call.string(0) ?? ""
            user = requested.isEmpty ? own : requested
        }
        let needsOtherUser = user.map { $0 != own } ?? false
        // The daemon's rule before polkit's: a user acts only for their own account, so polkit is not
        // even asked (no administrator's password dialog for a request that is refused anyway).
        // The daemon decides it and audits a refusal as the socket's (`Daemon.refusal`).
        if needsOtherUser, let user, let operation = method.account,
            let refused = backend.refusal(operation, caller: caller, target: user, door: door())
        {
            return call.fail(Self.error(for: refused))
        }
        // A claimer's VerifyStart: where it asks from (logind's round trip) is looked up while polkit
        // answers, not after; the presence rule still decides once polkit has allowed the call, and the
        // lookup is dropped when it does not (issue 29).
        if call.member == "VerifyStart", let session, session.sender == call.sender, !closing {
            earlyPresence = (
                call, backend.lookUpPresence(caller: session.caller, user: session.user, service: Self.verifyService)
            )
            call.whenAnswered { [self, weak call] in
                if let call, earlyPresence?.call === call { earlyPresence = nil }
            }
        }
        authorize(call, caller: caller, actions: needsOtherUser ? [.setUsername] : []) { [self] setUsername in
            guard setUsername != nil else { return }
            authorize(call, caller: caller, actions: method.actions) { [self] answer in
                guard let answer else { return }
                if let problem = claimProblem(call) {
                    refuse(call, problem)
                    return
                }
                perform(method, call, caller: caller, user: user, polkit: answer)
            }
        }
    }

    /// Asks polkit for each of `actions` in turn until one allows; `then(answer)` with the allowing
    /// answer, or (after the call was refused with PermissionDenied) nil. No actions: allowed at once.
    func authorize(
        _ call: BusCall, caller: PeerCredentials, actions: [Fprintd.Action], then: @escaping (PolkitAnswer?) -> Void
    ) {
        guard let action = actions.first else {
            then(PolkitAnswer(isAuthorized: true, isChallenge: false, details: [:]))
            return
        }
        polkit.check(sender: call.sender, action: action.rawValue) { [self] result in
            if case .success(let answer) = result, answer.isAuthorized { return then(answer) }
            if actions.count > 1 {
                return authorize(call, caller: caller, actions: Array(actions.dropFirst()), then: then)
            }
            let why =
                switch result {
                case .success: action.rawValue
                case .failure(let error): error.message
                }
            refuseNoticed(call, Fprintd.ErrorName.permissionDenied("Not Authorized: \(why)"), caller: caller)
            then(nil)
        }
    }

    /// A refusal that is no decision about an account (the claim, the state machine, a bad argument),
    /// or one the daemon has audited already: answered, not logged.
    func refuse(_ call: BusCall, _ error: BusError) {
        audit.debug("D-Bus \(call.member) on \(path) refused to \(call.sender): \(error.name) \(error.message)")
        call.fail(error)
    }

    /// A refusal of the door's own (polkit said no, no proof of presence for an enrolment): one
    /// notice line through the socket's throttle, counted under the caller's uid.
    func refuseNoticed(_ call: BusCall, _ error: BusError, caller: PeerCredentials) {
        gate.notice(
            "D-Bus \(call.member) on \(path) refused to \(call.sender) (\(caller)): \(error.message)",
            uid: caller.accountUID, kind: "D-Bus calls refused")
        call.fail(error)
    }

    /// This device's requests to the daemon: on its reader, named as the D-Bus door in the audit.
    func door(finger: FingerName? = nil, presence: DoorContext.Presence? = nil) -> DoorContext {
        DoorContext(readerID: reader.id, finger: finger, presence: presence, name: "dbus")
    }

    func perform(_ method: Method, _ call: BusCall, caller: PeerCredentials, user: String?, polkit: PolkitAnswer) {
        audit.debug(
            "\(path): \(call.member) of \(call.sender) authorised; action \(action), running \(running != nil), scanning \(scanning)"
        )
        method.perform(self, call, caller, user, polkit)
    }

    /// fprintd's `can_start_action`.
    func busyProblem() -> BusError? {
        switch action {
        case .none: nil
        case .enroll: Fprintd.ErrorName.alreadyInUse("Enrollment already in progress")
        case .verify: Fprintd.ErrorName.alreadyInUse("Verification already in progress")
        case .delete: Fprintd.ErrorName.alreadyInUse("Delete already in progress")
        case .list: Fprintd.ErrorName.alreadyInUse("Another operation is already in progress")
        }
    }

    func claim(_ call: BusCall, caller: PeerCredentials, user: String) {
        // A claimer that left the bus while its Claim waited (for its turn, for polkit) claims
        // nothing: fprintd watches each claimer's name, and nobody would release the claim.
        guard !vanishedClaimers.contains(call.sender) else {
            return refuse(call, Fprintd.ErrorName.claimDevice("The claimer left the bus"))
        }
        // A claimer that left the bus is gone, but its request is still ending: this Claim waits for
        // it (milliseconds), so nothing of the old request reaches the new claimer.
        if running != nil || scanning > 0 || closing {
            waitingClaims.append { [self] in
                if let problem = claimProblem(call) { return refuse(call, problem) }
                claim(call, caller: caller, user: user)
            }
            return
        }
        guard Daemon.isValidUserName(user) else {
            return refuse(call, Fprintd.ErrorName.internal("Not a valid user name (\(user.utf8.count) bytes)"))
        }
        // The claim is the daemon's request (`Daemon.claimReader`): its account rule (a user claims
        // only for their own account, whatever polkit said), its audit record, and the reader held
        // open until Release (fprintd opens it on Claim). The device counts as claimed meanwhile.
        let session = Session(sender: call.sender, user: user, caller: caller)
        self.session = session
        audit.debug("D-Bus client \(call.sender) (\(caller)) claims \(path) for \(user)")
        let hold = !holding
        holding = true
        let backend = self.backend
        let door = self.door()
        Task {
            let result = await backend.claimReader(user: user, caller: caller, door: door, hold: hold)
            self.bus.queue.async {
                if result.isSuccess { return call.reply() }
                if hold { self.holding = false }  // nothing is held: the daemon's hold failed or never began
                if self.session?.sender == session.sender { self.endSession() }
                call.fail(Self.claimError(result))
            }
        }
    }

    /// fprintd's error for a Claim the daemon refused or could not open the reader for.
    static func claimError(_ result: Answer) -> BusError {
        if let failure = result.readerFailure {
            return Fprintd.ErrorName.internal("Open failed with error: \(failure.english)")
        }
        return error(for: result)
    }

    /// Gives up the reader after a claim that ends without a Release (the claimer left, the reader was
    /// unplugged): through the daemon, which audits it.
    func letGo(_ claim: Session?) {
        guard holding else { return }
        holding = false
        guard let claim else { return }
        backend.abandonReader(user: claim.user, caller: claim.caller, door: door())
    }

    func release(_ call: BusCall) {
        // Release stops the action at once, also a scan the reader is still finishing.
        scans?.cancel()
        if running != nil || !stopCalls.isEmpty {
            stopCalls.append(call)
            stopRunning?()
            return
        }
        if holding, !unplugged, let claim = session {
            // fprintd closes the reader on Release and answers with the close's error; a second
            // Release meanwhile is AlreadyInUse.
            holding = false
            closing = true
            let backend = self.backend
            let door = self.door()
            Task {
                let released = await backend.releaseReader(
                    user: claim.user, caller: claim.caller, door: door, close: true)
                self.bus.queue.async {
                    self.closing = false
                    self.endSession()
                    defer { self.resumeClaims() }
                    guard let failure = released.readerFailure else { return call.reply() }
                    call.fail(Fprintd.ErrorName.internal("Release failed with error: \(failure.english)"))
                }
            }
            return
        }
        endSession()
        if unplugged {
            // As fprintd: the claimer learns the reader is gone, then the device leaves the bus.
            call.fail(
                Fprintd.ErrorName.internal("Release failed with error: \(ReaderFailure.removed.english)"))
            gone?()
        } else {
            call.reply()
        }
    }

    /// The reader went away. Unclaimed: true (remove the device now). Claimed: the device stays
    /// until its claimer releases it, as fprintd keeps it; its running request ends by itself.
    func readerRemoved() -> Bool {
        guard session != nil else { return true }
        unplugged = true
        return false
    }

    func endSession() {
        let ended = session
        session = nil
        action = .none
        statusReported = false
        startGeneration += 1
        letGo(ended)
    }

    /// A name left the bus. The claimer: what it started is stopped and the device is free at once
    /// (a Claim meanwhile waits for the stopped request to end). One whose Claim is still at the
    /// door (waiting for its turn or for polkit): that Claim will take nothing.
    func clientVanished(_ name: String) {
        knownSenders[name] = nil
        knownCallers[name] = nil
        // Calls waiting for the sender's lookup: it left, so they are not made (nobody is told).
        for call in lookups.removeValue(forKey: name) ?? [] {
            refuse(call, Fprintd.ErrorName.internal("The caller left the bus"))
        }
        if claimsInFlight[name] != nil { vanishedClaimers.insert(name) }
        guard session?.sender == name else { return }
        audit.debug("\(path): claimer \(name) left the bus; releasing")
        stopRunning?()
        scans?.cancel()
        endSession()
        if unplugged { gone?() }
    }

    /// Runs the Claims that waited for a request of a claimer that left to end, once it has.
    func resumeClaims() {
        guard running == nil, scanning == 0, !closing, !waitingClaims.isEmpty else { return }
        let claims = waitingClaims
        waitingClaims = []
        for claim in claims { claim() }
    }

    // MARK: List and delete

    func list(_ call: BusCall, caller: PeerCredentials, user: String) {
        let backend = self.backend
        Task {
            let result = await backend.handle(.list(user: user), caller: caller, io: .silent, door: self.door())
            self.bus.queue.async {
                guard result.isSuccess else {
                    return self.refuse(call, Self.error(for: result))  // audited by the daemon
                }
                guard case .fingers(let enrolled) = result.payload, !enrolled.isEmpty else {
                    return call.fail(Fprintd.ErrorName.noEnrolledPrints("Failed to discover prints"))
                }
                call.reply([.strings(enrolled.map(\.rawValue))])
            }
        }
    }

    func deleteOne(_ call: BusCall, finger: Fprintd.FingerArgument) {
        guard let session else { return refuse(call, Fprintd.ErrorName.claimDevice("Device was not claimed")) }
        guard case .finger(let name) = finger else {
            return refuse(call, Fprintd.ErrorName.invalidFingername("Invalid finger name"))
        }
        delete(call, caller: session.caller, user: session.user, finger: name)
    }

    func delete(_ call: BusCall, caller: PeerCredentials, user: String, finger: FingerName?) {
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
                switch result.code {
                case .success: call.reply()
                case .notFound:
                    call.fail(
                        Fprintd.ErrorName.noEnrolledPrints(
                            finger.map { "Fingerprint for finger \($0.rawValue) is not enrolled" }
                                ?? "No fingerprint enrolled"))
                case .internalError:
                    call.fail(
                        Fprintd.ErrorName.printsNotDeleted(
                            "Impossible to delete fingerprint reference: \(result.english)"))
                default: self.refuse(call, Self.error(for: result))  // audited by the daemon
                }
            }
        }
    }
}
