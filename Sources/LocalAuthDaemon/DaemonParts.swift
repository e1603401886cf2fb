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

    /// The reader biometrics use: the one named (`ReaderDeviceInfo.id`, nil when it is not present),
    /// else the first one libfprint reports.
    nonisolated(nonsending) func currentDevice(_ named: String? = nil) async -> ReaderDeviceInfo? {
        let present = await reader?.devices() ?? []
        if let named { return present.first { $0.id == named } }
        let device = present.first
        if device == nil { reader?.lookForReadersIfNone() }  // a replugged reader is found again
        return device
    }

    /// The reader a user's evaluation uses, with several readers: the one a door names; else the
    /// first present reader that holds one of the user's prints; else the first present reader.
    /// `onlyOnAbsentReaders`: the user's prints are all on readers that are not connected.
    nonisolated(nonsending) func device(forUser user: String, named: String?) async -> (
        device: ReaderDeviceInfo?, onlyOnAbsentReaders: Bool
    ) {
        if let named { return (await currentDevice(named), false) }
        let present = await reader?.devices() ?? []
        if present.isEmpty { reader?.lookForReadersIfNone() }
        let keys = Set(((try? store.allPrints(user: user)) ?? []).map(\.deviceKey))
        let holding = present.first { keys.contains($0.storageKey) }
        return (holding ?? present.first, holding == nil && !keys.isEmpty)
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

    /// The user's prints for `device`; none without a device.
    func enrolledPrints(_ user: String, on device: ReaderDeviceInfo?) -> [StoredPrint] {
        guard let device else { return [] }
        return (try? store.prints(user: user, deviceKey: device.storageKey)) ?? []
    }
}
