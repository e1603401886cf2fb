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
    nonisolated(nonsending) func list(user: String, readerID: String? = nil) async -> LocalAuthProtocol.Result {
        let prints =
            readerID != nil
            ? parts.enrolledPrints(user, on: await parts.currentDevice(readerID))
            : ((try? parts.store.allPrints(user: user)) ?? [])
        var extra = Frame(.result)
        var seen = Set<String>()
        for p in prints where seen.insert(p.finger).inserted { extra.append(.finger, string: p.finger) }
        let n = seen.count
        return Result(
            .success,
            n == 0 ? "No fingers enrolled for \(user)" : "\(n) finger\(n == 1 ? "" : "s") enrolled for \(user)",
            extra: extra.fields)
    }

    /// Deletes the finger (or `all`) on every reader, or only on the one `readerID` names.
    nonisolated(nonsending) func delete(user: String, finger: FingerName?, all: Bool, readerID: String? = nil) async
        -> LocalAuthProtocol.Result
    {
        guard all || finger != nil else { return Result(.invalidRequest, "Name a finger or ask for all") }
        let named = readerID == nil ? nil : await parts.currentDevice(readerID)
        if readerID != nil && named == nil { return Result(.biometryNotAvailable, "That reader is not connected") }
        let prints = (try? parts.store.allPrints(user: user)) ?? []
        let doomed = prints.filter {
            (all || $0.finger == finger?.rawValue) && (named == nil || $0.deviceKey == named?.storageKey)
        }
        guard !doomed.isEmpty else {
            return Result(
                .notFound, all ? "No fingers enrolled for \(user)" : "\(finger!.rawValue) is not enrolled for \(user)")
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
            var extra = Frame(.result)
            extra.append(.domainState, bytes: state.domainState)
            return Result(
                .success, "Deleted \(doomed.count) print\(doomed.count == 1 ? "" : "s") of \(user)", extra: extra.fields
            )
        } catch {
            parts.audit.notice("cannot delete prints of \(user): \(error)")
            return Result(.internalError, "The prints could not be deleted")
        }
    }

    /// Sets (`new`) or removes (nil) the passcode; anyone but root proves the current one first.
    nonisolated(nonsending) func setPasscode(user: String, new: String?, old: String?, caller: PeerCredentials) async
        -> LocalAuthProtocol.Result
    {
        let loaded = parts.loadState(user)
        var state = loaded.state
        guard loaded.readable else {
            return Result(.biometryNotAvailable, "The stored state of \(user) is unreadable; ask an administrator")
        }
        if let hash = state.passcodeHash, !caller.isRoot {
            let now = max(parts.clock(), state.lastSeenMs)
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
                let delay = PasscodeDelay.schedule(
                    failures: state.passcodeFailures, config: parts.configuration.lockout)
                if delay > 0 { state.passcodeLockedUntilMs = now + delay * 1000 }
                try? parts.store.saveState(state, user: user)
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
            try parts.store.saveState(state, user: user)
        } catch {
            return Result(.internalError, "The passcode could not be stored")
        }
        return Result(.success, new == nil ? "Passcode removed for \(user)" : "Passcode set for \(user)")
    }

    /// Clears the user's counters and lockouts on disk; the daemon forgets the reuse windows.
    func resetLockout(user: String) -> LocalAuthProtocol.Result {
        do {
            try parts.store.resetState(user: user)
        } catch {
            return Result(.internalError, "The lockout of \(user) could not be reset: \(error)")
        }
        return Result(.success, "Lockouts and reuse windows of \(user) cleared")
    }
}
