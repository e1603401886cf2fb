// SPDX-License-Identifier: Apache-2.0
import FingerprintReader
import LocalAuthCore
import LocalAuthProtocol
import LocalAuthStore

/// What a user (or root) does to an account's stored prints and passcode: list, delete, set or
/// remove the passcode, reset the lockouts. Each runs in the user's turn (`UserQueue`).
struct AccountRequests {
    let parts: DaemonParts

    /// The user's fingers on the reader `readerID` names (none when it is not present), else on
    /// every reader, present or not.
    nonisolated(nonsending) func list(user: String, readerID: String? = nil) async -> Answer {
        let prints =
            readerID != nil
            ? parts.enrolledPrints(user, on: await parts.currentDevice(readerID))
            : ((try? parts.store.allPrints(user: user)) ?? [])
        // An array, not a Set: a Set<FingerName>'s first use scans every conformance record of the
        // binary (docs/performance.md, "Cold start and `list`, taken apart"); ten fingers at most.
        var fingers: [FingerName] = []
        for finger in prints.map(\.finger) where !fingers.contains(finger) { fingers.append(finger) }
        let n = fingers.count
        return Answer(
            .success,
            n == 0
                ? Phrase.said("No fingers enrolled for %s", .verbatim(user))
                : Phrase.said("Fingers enrolled for %1$s: %2$s", .verbatim(user), .verbatim(String(n))),
            .fingers(fingers))
    }

    /// Deletes the finger (or `all`) on every reader, or only on the one `readerID` names.
    nonisolated(nonsending) func delete(user: String, finger: FingerName?, all: Bool, readerID: String? = nil) async
        -> Answer
    {
        guard all || finger != nil else {
            return Answer(.invalidRequest, Phrase.said("Name a finger or ask for all"))
        }
        let named = readerID == nil ? nil : await parts.currentDevice(readerID)
        if readerID != nil && named == nil {
            return Answer(.biometryNotAvailable, Phrase.said("That reader is not connected"))
        }
        let prints = (try? parts.store.allPrints(user: user)) ?? []
        let doomed = prints.filter {
            (all || $0.finger == finger) && (named == nil || $0.deviceKey == named?.storageKey)
        }
        guard !doomed.isEmpty else {
            return Answer(
                .notFound,
                all
                    ? Phrase.said("No fingers enrolled for %s", .verbatim(user))
                    : Phrase.said("The %1$s is not enrolled for %2$s", .fingerName(finger!), .verbatim(user)))
        }
        // Prints kept on the reader's own storage go too, best effort: the store is the truth.
        if let reader = parts.reader, let device = await parts.currentDevice(readerID), device.hasStorage {
            for p in doomed where p.deviceKey == device.storageKey {
                try? await reader.deleteStoredPrint(deviceID: device.id, print: p.data)
            }
        }
        do {
            // One write, one new domain state, however many prints go.
            let everything = all && named == nil
            var state = everything ? try parts.store.removeAllPrints(user: user) : UserAuthState()
            if !everything {
                for p in doomed {
                    state = try parts.store.removePrint(user: user, deviceKey: p.deviceKey, finger: p.finger)
                }
            }
            return Answer(
                .success,
                Phrase.said("Prints deleted for %1$s: %2$s", .verbatim(user), .verbatim(String(doomed.count))),
                .domainState(state.domainState))
        } catch {
            parts.audit.notice("cannot delete prints of \(user): \(error)")
            return Answer(.internalError, Phrase.said("The prints could not be deleted"))
        }
    }

    /// Sets (`new`) or removes (nil) the passcode, as the core's `PasscodeChange` decides: root needs
    /// no proof; anyone else the current passcode (counted before it is hashed) or, for a first
    /// passcode, an enrolled finger in this same request (`proveByFinger` runs a biometrics-only
    /// evaluation, whose misses count). A passcode the user's own processes could set on their own
    /// would otherwise prove presence for them (issue 13, C1).
    nonisolated(nonsending) func setPasscode(
        user: String, new: String?, old: String?, caller: PeerCredentials,
        proveByFinger: (EvaluateOptions) async -> Decision
    ) async -> Answer {
        // The new passcode's form is checked first: a malformed one costs no attempt.
        if let new, PasscodeHasher.problem(with: new) != nil {
            return Answer(
                .invalidRequest,
                Phrase.said(
                    "A passcode must be %1$s to %2$s bytes of text, without a NUL character",
                    .verbatim(String(PasscodeHasher.allowedLength.lowerBound)),
                    .verbatim(String(PasscodeHasher.allowedLength.upperBound))))
        }
        let loaded = parts.loadState(user)
        var change = PasscodeChange(
            user: user, change: new == nil ? .remove : .set, callerIsRoot: caller.isRoot, oldPasscodeGiven: old != nil,
            state: loaded.state, stateReadable: loaded.readable, config: parts.configuration.lockout)
        var recorded = loaded.state  // as on disk
        var outputs = change.start(nowMs: parts.clock())
        while true {
            var input: PasscodeChange.Input?
            for output in outputs {
                switch output {
                case .persist(let state, _):
                    if parts.record(state, user: user, previous: recorded) {
                        recorded = state
                    } else {
                        input = .recordFailed
                    }
                case .proveByFinger:
                    let proof = await proveByFinger(
                        EvaluateOptions(
                            policy: .deviceOwnerAuthenticationWithBiometrics, user: user,
                            service: "localauthctl passcode", reason: "Confirm it is you to set a passcode",
                            fallbackTitle: "", tries: 1,
                            timeoutMs: min(parts.configuration.enrollTimeoutMs, EvaluateOptions.maxTimeoutMs)))
                    let after = parts.loadState(user)
                    recorded = after.state
                    input = .fingerProof(proof, state: after.state)
                case .checkOldPasscode:
                    // At a person's pace, as in an evaluation (the attempt is counted already).
                    let waitMs = parts.pacer.reserve(user, nowMs: parts.clock())
                    if waitMs > 0 { try? await Task.sleep(for: .milliseconds(waitMs)) }
                    let hash = change.state.passcodeHash ?? ""
                    let correct = await PasscodeHasher.checkOffTheActor(old ?? "", hash: hash)
                    input = .oldPasscodeChecked(correct: correct)
                case .hashNewPasscode:
                    let hashed = await Task.detached { try? PasscodeHasher.hash(new ?? "") }.value
                    input = hashed.map { .newPasscodeHashed($0) } ?? .hashingFailed
                case .finish(let decision):
                    return Answer(decision)
                }
                if input != nil { break }
            }
            guard let input else {
                return Answer(.internalError, Phrase.said("The passcode change stopped without an answer"))
            }
            outputs = change.handle(input, nowMs: parts.clock())
        }
    }

    /// Clears the user's counters and lockouts on disk; the daemon forgets the reuse windows.
    func resetLockout(user: String) -> Answer {
        do {
            try parts.store.resetState(user: user)
        } catch {
            return Answer(
                .internalError,
                Phrase.said("The lockout of %1$s could not be reset: %2$s", .verbatim(user), .verbatim("\(error)")))
        }
        return Answer(.success, Phrase.said("Lockouts and reuse windows of %s cleared", .verbatim(user)))
    }
}
