// SPDX-License-Identifier: Apache-2.0
import Dispatch
import LocalAuthDaemon
import LocalAuthProtocol
import LocalAuthSystemd
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// `FprintdDevice`'s calls that use the reader: VerifyStart and EnrollStart, their status signals,
/// and VerifyStop / EnrollStop.
extension FprintdDevice {
    /// Starts `kind` with no status reported yet; returns the start's generation, which its
    /// preparation must still find when it is done (a Stop or Release meanwhile moves it on).
    func begin(_ kind: ActionKind) -> Int {
        action = kind
        statusReported = false
        startGeneration += 1
        return startGeneration
    }

    // MARK: Verify

    /// VerifyStart is one evaluation (issue 28): its answer waits for the evaluation's first scan,
    /// which names the enrolled fingers it compares (`ScanStart`); an evaluation the daemon's rules
    /// refuse before any scan (presence, lockout, no finger) answers it with fprintd's error, and the
    /// daemon's own audit record of the evaluation is the only one.
    func verifyStart(_ call: BusCall, finger: Fprintd.FingerArgument) {
        guard let session else { return refuse(call, Fprintd.ErrorName.claimDevice("Device was not claimed")) }
        if let problem = busyProblem() { return refuse(call, problem) }
        _ = begin(.verify)
        verifyCall = call
        let early = earlyPresence?.call === call ? earlyPresence?.lookup : nil
        earlyPresence = nil
        startVerification(session, finger: finger.name, presence: early)
    }

    /// The verification's first scan starts: VerifyStart is answered and the finger it scans named.
    func verifyScanning(_ start: ScanStart, session: Session) {
        guard let call = verifyCall, self.session?.sender == session.sender else { return }
        verifyCall = nil
        call.reply()
        // To the claimer only (fprintd broadcasts it): nobody else learns the finger's name (issue 26).
        bus.emitSignal(
            path: path, interface: Fprintd.deviceInterface, member: "VerifyFingerSelected",
            [.string(start.finger?.rawValue ?? "any")], destination: session.sender)
    }

    /// A verification that ended before its first scan: VerifyStart's answer. A success (the
    /// account's reuse window) is answered as a verification that matched at once, and a reader
    /// another request had taken as one that failed at once (`verify-unknown-error`), as when the
    /// door asked canEvaluate first, which does not look at the reader's holder: true when a final
    /// status follows.
    func verifyEndedUnscanned(_ call: BusCall, result: Answer, stopped: Bool, finger: FingerName?) -> Bool {
        if stopped {
            action = .none
            call.fail(Fprintd.ErrorName.internal("The verification was stopped before it began"))
            return false
        }
        guard let session else {
            action = .none
            refuse(call, Fprintd.ErrorName.claimDevice("Device was released"))
            return false
        }
        if result.isSuccess || Self.readerWasTaken(result) {
            call.reply()
            bus.emitSignal(
                path: path, interface: Fprintd.deviceInterface, member: "VerifyFingerSelected",
                [.string(finger?.rawValue ?? "any")], destination: session.sender)
            return true
        }
        switch result.code {
        case .biometryNotEnrolled:
            action = .none
            let message = finger.map { "No such print \($0.fingerNumber)" } ?? "No fingerprints enrolled"
            refuse(call, Fprintd.ErrorName.noEnrolledPrints(message))
        default:
            action = .none
            refuse(call, Fprintd.ErrorName.permissionDenied("Not Authorized: \(result.english)"))
        }
        return false
    }

    /// Whether an evaluation found the reader held by another request (or its account's share of it
    /// used up): the answer's phrase says so, by type.
    static func readerWasTaken(_ result: Answer) -> Bool {
        guard case .fingerNotAvailable(let why) = result.phrase else { return false }
        switch why {
        case .readerBusy, .readerShareUsed: return true
        default: return false
        }
    }

    func startVerification(_ session: Session, finger: FingerName?, presence early: PresenceLookup? = nil) {
        audit.debug("\(path): verification for \(session.user) starts")
        // The door's one signal (a Stop's cancel) is offered straight to the request: no stream, so
        // no second task to carry it.
        let signals = ClientSignals()
        let bus = self.bus
        let scans = Scans()
        self.scans = scans
        scanning += 1
        let scanned = StopFlag()
        let io = RequestIO(
            send: { [self] event in
                guard event.kind == .retry else { return }
                bus.queue.async { self.emitStatus("VerifyStatus", Fprintd.verifyRetryName(event.hint), done: false) }
            }, signals: signals,
            scanStarted: { [self] start in
                scans.add(start.scan)
                scanned.value = true
                bus.queue.async { self.verifyScanning(start, session: session) }
            })
        let options = EvaluateOptions(
            policy: .deviceOwnerAuthenticationWithBiometrics, user: session.user, service: Self.verifyService,
            tries: 1, timeoutMs: EvaluateOptions.maxTimeoutMs)
        let backend = self.backend
        var door = self.door(finger: finger)
        door.presenceLookup = early
        let stopped = StopFlag()
        stopRunning = {
            stopped.value = true
            signals.offer(.cancel)
        }
        running = Task {
            var result: Answer
            repeat {
                // fprintd's verify waits for a finger until stopped: a daemon timeout starts a new one.
                result = await backend.handle(.evaluate(options), caller: session.caller, io: io, door: door)
            } while result.code == .timedOut && scanned.value && !Task.isCancelled
            let final = result
            bus.queue.async {
                self.finished(kind: .verify, result: final, stopped: stopped.value, finger: finger)
            }
            await scans.ended()
            bus.queue.async { self.readerFinished(scans) }
        }
    }

    /// A verification's reader scans have all ended: the Stop or Release that waited for them.
    func readerFinished(_ ended: Scans) {
        scanning -= 1
        if scans === ended { scans = nil }
        answerStops()
        resumeClaims()
    }

    // MARK: Enrol

    func enrollStart(_ call: BusCall, finger: Fprintd.FingerArgument, polkit: PolkitAnswer) {
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
                return refuseNoticed(
                    call,
                    Fprintd.ErrorName.permissionDenied(
                        "Not Authorized: adding a finger needs the account password typed in the authentication dialog, and polkit allowed \(Fprintd.Action.enroll.rawValue) without one"
                    ), caller: session.caller)
            }
            presence = .polkitAuthentication(temporaryAuthorization: id)
        }
        let generation = begin(.enroll)
        let backend = self.backend
        Task {
            // fprintd replaces a finger enrolled again: the old print goes first.
            let listed = await backend.handle(
                .list(user: session.user), caller: session.caller, io: .silent, door: self.door())
            let enrolled: [FingerName] = if case .fingers(let fingers) = listed.payload { fingers } else { [] }
            let replaced: Answer? =
                enrolled.contains(name)
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
                    return self.refuse(call, Self.error(for: replaced))  // audited by the daemon: op=delete
                }
                call.reply()
                self.startEnrolment(session, finger: name, presence: presence)
            }
        }
    }

    func startEnrolment(_ session: Session, finger: FingerName, presence: DoorContext.Presence?) {
        let signals = ClientSignals()
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
            signals.offer(.cancel)
            enrolment.cancel()
        }
        running = Task {
            let result = await enrolment.value
            bus.queue.async { self.finished(kind: .enroll, result: result, stopped: stopped.value) }
        }
    }

    func enrollEvent(_ event: Event) {
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
    func stop(_ call: BusCall, kind: ActionKind) {
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
    func finished(kind: ActionKind, result: Answer, stopped: Bool, finger: FingerName? = nil) {
        audit.debug("\(path): \(kind) ended: \(result.code) \(result.english)\(stopped ? " (stopped)" : "")")
        running = nil
        stopRunning = nil
        // A verification that ended before its first scan answers its VerifyStart; refused, it has
        // no status to report.
        var refused = false
        if kind == .verify, let call = verifyCall {
            verifyCall = nil
            refused = !verifyEndedUnscanned(call, result: result, stopped: stopped, finger: finger)
        }
        // The reader's own word comes before libfprint's hot-plug event: the claim ends as unplugged.
        if result.readerFailure == .removed { unplugged = true }
        guard session != nil else {
            // Its claimer left the bus (the device was released then): no status, to nobody; a Stop
            // or Release it sent before it left is answered, and the Claims that waited for this
            // request to end go on.
            if unplugged { gone?() }
            answerStops()
            return resumeClaims()
        }
        if !statusReported && !refused {
            if kind == .verify {
                emitStatus("VerifyStatus", stopped ? "verify-no-match" : Fprintd.verifyResultName(result), done: true)
            } else {
                emitStatus("EnrollStatus", stopped ? "enroll-failed" : Fprintd.enrollResultName(result), done: true)
            }
        }
        answerStops()
    }

    /// Answers the Stop and Release calls that waited, once the request has ended and the reader
    /// has finished its scans (fprintd's VerifyStop lets a reader that reported finish).
    func answerStops() {
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

    /// A status signal to the claimer only (fprintd broadcasts them): nobody else learns when the
    /// claimer verifies or enrols and with what result (issue 26), and a status of a claimer that
    /// left reaches no later one.
    func emitStatus(_ signal: String, _ name: String, done: Bool) {
        guard !(statusReported && done), let claimer = session?.sender else { return }
        if done { statusReported = true }
        bus.emitSignal(
            path: path, interface: Fprintd.deviceInterface, member: signal, [.string(name), .bool(done)],
            destination: claimer)
    }

    /// The service a verification over the door names in the audit.
    static let verifyService = "fprintd-compat"
}
