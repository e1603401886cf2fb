// SPDX-License-Identifier: Apache-2.0
import FingerprintReader
import LocalAuthCore
import LocalAuthProtocol
import LocalAuthStore
import LocalAuthSystemd

/// What every use case works with: the reader, the store, the configuration, the audit log, the
/// clock and logind. Shared by value; each part is safe to use from any task.
struct DaemonParts: Sendable {
    let reader: FingerprintReader?
    let store: EnrollmentStore
    let configuration: DaemonConfiguration
    /// Set when started with `--virtual-reader`: the virtual device's control socket.
    let virtualReaderSocket: String?
    let audit: AuditLog
    let clock: @Sendable () -> Int64
    let sessions: LoginSessions

    /// The reader biometrics use: the first one libfprint reports.
    nonisolated(nonsending) func currentDevice() async -> ReaderDeviceInfo? {
        let device = await reader?.devices().first
        if device == nil { reader?.lookForReadersIfNone() }  // a replugged reader is found again
        return device
    }

    /// A user's stored state; unreadable (corrupt, or the read failed) is said, never read as empty.
    struct LoadedState {
        var state: UserAuthState
        var readable: Bool
    }

    func loadState(_ user: String) -> LoadedState {
        do {
            switch try store.loadState(user: user) {
            case .absent: return LoadedState(state: UserAuthState(), readable: true)
            case .ok(let state): return LoadedState(state: state, readable: true)
            case .corrupt(let why):
                audit.notice(
                    "stored state of \(user) is unreadable (\(why)); biometrics refused until `localauthctl lockout reset --user \(user)`"
                )
                return LoadedState(state: UserAuthState(), readable: false)
            }
        } catch {
            audit.notice("cannot read the state of \(user): \(error)")
            return LoadedState(state: UserAuthState(), readable: false)
        }
    }

    /// Writes `new` durably, auditing a lockout set or lifted since `previous` (what is on disk).
    /// Every path that counts writes through here; false (with a notice) when the write failed.
    func record(_ new: UserAuthState, user: String, previous: UserAuthState) -> Bool {
        do {
            try store.saveState(new, user: user)
        } catch {
            audit.notice("cannot record the state of \(user): \(error)")
            return false
        }
        if new.biometryLocked != previous.biometryLocked {
            audit.lockout(user: user, new.biometryLocked ? "biometry locked" : "biometry unlocked")
        }
        // An attempt is counted (and its delay armed) before the passcode is checked; a correct one
        // lifts the delay again, and says so.
        if new.passcodeLockedUntilMs != previous.passcodeLockedUntilMs {
            if new.passcodeLockedUntilMs > 0 {
                let seconds = (new.passcodeLockedUntilMs - max(clock(), new.lastSeenMs) + 999) / 1000
                audit.lockout(
                    user: user, "passcode delayed for \(seconds) s after \(new.passcodeFailures) passcode attempts")
            } else if previous.passcodeLockedUntilMs > max(clock(), new.lastSeenMs) {
                audit.lockout(user: user, "passcode delay lifted")
            }
        }
        return true
    }

    /// The user's prints for `device`; none without a device.
    func enrolledPrints(_ user: String, on device: ReaderDeviceInfo?) -> [StoredPrint] {
        guard let device else { return [] }
        return (try? store.prints(user: user, deviceKey: device.storageKey)) ?? []
    }
}
