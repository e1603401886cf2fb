// SPDX-License-Identifier: Apache-2.0
import FingerprintReader
import LocalAuthCore
import LocalAuthProtocol
import LocalAuthStore

/// Adding a finger: root enrols any finger; anyone else only a later finger, after proving presence
/// (an enrolled finger or the passcode) in an ordinary evaluation, whose failures count toward the
/// same lockouts as any other.
struct Enrollment {
    let parts: DaemonParts

    /// The fingers offered when none is named, in this order.
    static let order: [FingerName] = [
        .rightIndex, .leftIndex, .rightMiddle, .leftMiddle, .rightThumb, .leftThumb, .rightRing, .leftRing,
        .rightLittle, .leftLittle,
    ]

    /// Enrols `requested` (else the first free finger of `order`) for `user` on the reader the door
    /// names (else the current one); `prove` runs the proof of presence a non-root caller needs,
    /// unless the door proved presence itself (`DoorContext.presence`).
    nonisolated(nonsending) func enroll(
        user: String, finger requested: FingerName?, passcodeCapable: Bool, caller: PeerCredentials, io: RequestIO,
        door: DoorContext = DoorContext(), prove: (EvaluateOptions) async -> Decision
    ) async -> Answer {
        guard let reader = parts.reader, let device = await parts.currentDevice(door.readerID) else {
            return Answer(.biometryNotAvailable, Phrase.said("No fingerprint reader is connected"))
        }
        let all = (try? parts.store.allPrints(user: user)) ?? []
        let onDevice = all.filter { $0.deviceKey == device.storageKey }
        if case .polkitAuthentication(let id) = door.presence, !caller.isRoot {
            parts.audit.info(
                "enrolment for \(user) by \(caller): presence proven by polkit (the account password, temporary authorisation \(id))"
            )
        } else if !caller.isRoot {
            guard !all.isEmpty else {
                return Answer(
                    .notAuthorized,
                    Phrase.said(
                        "A first finger can only be enrolled by root: sudo localauthctl enroll --user %s",
                        .verbatim(user)))
            }
            let proof = await prove(
                EvaluateOptions(
                    policy: .deviceOwnerAuthentication, user: user, service: "localauthctl enroll",
                    reason: "Confirm it is you to add a finger", flags: passcodeCapable ? [.passcodeCapable] : [],
                    tries: 1, timeoutMs: min(parts.configuration.enrollTimeoutMs, EvaluateOptions.maxTimeoutMs)))
            guard proof.isSuccess else {
                return Answer(
                    proof.code,
                    Phrase.said("Adding a finger needs an enrolled finger or the passcode first: %s", proof.phrase))
            }
        }
        let taken = Set(onDevice.map(\.finger))
        let finger: FingerName
        if let requested {
            guard !taken.contains(requested) else {
                return Answer(
                    .alreadyEnrolled,
                    Phrase.said("The %s is enrolled already; delete it first", .fingerName(requested)))
            }
            finger = requested
        } else {
            guard let free = Self.order.first(where: { !taken.contains($0) }) else {
                return Answer(.alreadyEnrolled, Phrase.said("All ten fingers are enrolled"))
            }
            finger = free
        }
        // The reader for the enrol stages: never while another request has it.
        let label = RequestLabel(program: Whereabouts.programName(caller, service: "localauthctl"), account: user)
        let holder = ReaderLease.Holder(id: parts.lease.newID(), label: label)
        if case .busy(let other) = parts.lease.take(holder, nowMs: parts.clock(), shareMs: nil) {
            let why = ReaderUnavailable.readerBusy(by: other.label.account == user ? other.label : nil)
            return Answer(.busy, Phrase.fingerNotAvailable(why))
        }
        defer { parts.lease.release(holder.id, nowMs: parts.clock()) }
        io.send(Notice(.placeFinger, .forRequest(.placeFinger(finger), label), finger: finger).event)
        let checksDuplicates = door.refuseDuplicates && device.supportsIdentify
        if checksDuplicates, let refused = await refuseDuplicate(user: user, reader: reader, device: device, io: io) {
            return refused
        }
        let data: [UInt8]
        switch await scanStages(
            of: finger, user: user, reader: reader, device: device, io: io, extraStage: checksDuplicates)
        {
        case .print(let scanned): data = scanned
        case .failed(let result): return result
        }
        do {
            let state = try parts.store.addPrint(
                StoredPrint(
                    finger: finger, deviceKey: device.storageKey, data: data, enrolledAtMs: parts.clock()),
                user: user)
            return Answer(
                .success, Phrase.said("Enrolled the %1$s of %2$s", .fingerName(finger), .verbatim(user)),
                .enrolled(finger, domainState: state.domainState))
        } catch {
            parts.audit.notice("cannot store the print of \(user): \(error)")
            return Answer(.internalError, Phrase.said("The print could not be stored"))
        }
    }

    /// What the reader's enrol stages gave: a print, or the RESULT to answer with.
    enum Scan {
        case print([UInt8])
        case failed(Answer)
    }

    /// The duplicate check: one identify scan against every account's prints on this reader. A
    /// match ends the enrolment (`alreadyEnrolled`, naming no account); otherwise the scan is reported
    /// as the first of `enrollStages + 1` stages. Nil: no duplicate, go on.
    private nonisolated(nonsending) func refuseDuplicate(
        user: String, reader: FingerprintReader, device: ReaderDeviceInfo, io: RequestIO
    ) async -> Answer? {
        let users = (try? parts.store.users()) ?? []
        let gallery = users.flatMap { (try? parts.store.prints(user: $0, deviceKey: device.storageKey)) ?? [] }
        let timeout = parts.configuration.enrollTimeoutMs
        let scan = Task {
            try await reader.identify(deviceID: device.id, prints: gallery.map(\.data)) { progress in
                if case .retry(let hint) = progress {
                    io.send(Event(.retry, hint.message, hint: hint))
                }
            }
        }
        let timer = DeadlineTimer(ms: timeout) { scan.cancel() }
        defer { timer.cancel() }
        do {
            let match = try await withTaskCancellationHandler {
                try await scan.value
            } onCancel: {
                scan.cancel()
            }
            if match != nil {
                return Answer(
                    .alreadyEnrolled, Phrase.said("This finger is enrolled already; enrol another finger"))
            }
        } catch ReaderFailure.dataNotFound {
            // A match-on-chip reader's own answer for "none of these prints is stored here": no duplicate.
        } catch {
            if Task.isCancelled { return Answer(.systemCancel, Phrase.said("Enrolment cancelled")) }
            if ReaderFailure.cancelled == error as? ReaderFailure {
                return Answer(
                    .timedOut, Phrase.said("No finger was presented within %s s", .verbatim(String(timeout / 1000))))
            }
            return ReaderFailure(error).answer
        }
        let stages = Int64(device.enrollStages + 1)
        let line = Phrase.said("Enrolling: stage %1$s of %2$s", .verbatim("1"), .verbatim(String(stages)))
        io.send(Event(.enrollStage, line.english, stage: 1, stages: stages, phrase: line))
        return nil
    }

    /// The reader's enrol stages, each reported to the client, within the enrolment timeout; with
    /// `extraStage`, numbered after the duplicate check's.
    private nonisolated(nonsending) func scanStages(
        of finger: FingerName, user: String, reader: FingerprintReader, device: ReaderDeviceInfo, io: RequestIO,
        extraStage: Bool = false
    ) async -> Scan {
        let shift = extraStage ? 1 : 0
        let timeout = parts.configuration.enrollTimeoutMs
        let enrolment = Task {
            try await reader.enroll(deviceID: device.id, finger: finger.fingerNumber, username: user) { progress in
                switch progress {
                case .enrollStage(let done, let of):
                    let (stage, stages) = (Int64(done + shift), Int64(of + shift))
                    let line = Phrase.said(
                        "Enrolling: stage %1$s of %2$s", .verbatim(String(stage)), .verbatim(String(stages)))
                    io.send(Event(.enrollStage, line.english, stage: stage, stages: stages, phrase: line))
                case .retry(let hint):
                    io.send(Event(.retry, hint.message, hint: hint, phrase: .retry(hint)))
                case .fingerNeeded, .fingerPresent, .matched:
                    break
                }
            }
        }
        let timer = DeadlineTimer(ms: timeout) { enrolment.cancel() }
        defer { timer.cancel() }
        do {
            return .print(
                try await withTaskCancellationHandler {
                    try await enrolment.value
                } onCancel: {
                    enrolment.cancel()
                })
        } catch {
            if Task.isCancelled { return .failed(Answer(.systemCancel, Phrase.said("Enrolment cancelled"))) }
            if ReaderFailure.cancelled == error as? ReaderFailure {
                return .failed(
                    Answer(
                        .timedOut,
                        Phrase.said("No finger was presented within %s s", .verbatim(String(timeout / 1000)))))
            }
            return .failed(ReaderFailure(error).answer)
        }
    }
}
