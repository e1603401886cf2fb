// SPDX-License-Identifier: Apache-2.0
import FingerprintReader
import LocalAuthCore
import LocalAuthProtocol
import LocalAuthStore
import LocalAuthSystemd

/// What an evaluation (or `canEvaluate`) decides on, gathered once per request after the presence
/// rule let it through (`Whereabouts`): the policy core's facts, the user's stored state, the
/// reader and prints biometrics would use.
struct CallerFacts {
    var evaluation: EvaluationFacts
    var state: UserAuthState
    /// The reader biometrics use; nil when none may be used (none present, the lid closed on a
    /// built-in reader).
    var device: ReaderDeviceInfo?
    var prints: [StoredPrint]
    /// The reader is there but built in and the lid is closed (Apple's `builtInSensorInaccessible`).
    var builtInSensorInaccessible = false

    /// The reader and the store; logind was asked already (`whereabouts`). A door may name the
    /// reader (`readerID`) and the one finger that counts (`finger`).
    nonisolated(nonsending) static func gather(
        user: String, whereabouts: Whereabouts, parts: DaemonParts, readerID: String? = nil,
        finger: FingerName? = nil
    ) async -> CallerFacts {
        let (device, onlyOnAbsentReaders, onDevice) = await parts.device(forUser: user, named: readerID)
        let loaded = parts.loadState(user)
        let prints = onDevice.filter { finger == nil || $0.finger == finger }
        let builtIn = parts.isBuiltIn(device)
        let unavailable: ReaderUnavailable?
        if case .refused(let why) = whereabouts.verdict {
            unavailable = why  // the daemon refuses before it gathers; kept so that no path can scan
        } else if device == nil {
            unavailable = .noReader
        } else if builtIn && whereabouts.place.lidClosed {
            unavailable = .lidClosed  // the lid covers a built-in reader, not an external one
        } else {
            unavailable = nil
        }
        // An unplugged USB reader is named as such, unless something else keeps biometrics away anyway.
        let disconnected = onlyOnAbsentReaders && (unavailable == nil || unavailable == .noReader)
        var evaluation = EvaluationFacts(
            readerUnavailable: unavailable, enrolledFingers: prints.map(\.finger), stateReadable: loaded.readable,
            readerCanIdentify: device?.supportsIdentify ?? true, enrolledOnlyOnAbsentReaders: disconnected)
        evaluation.stateFromNewerVersion = loaded.fromNewerVersion
        // Only when a finger could otherwise be used: the rules read a file and may ask logind.
        if unavailable == nil, !prints.isEmpty {
            evaluation.passwordRequired = await parts.passwordRequirementForEvaluation(user: user).reason
        }
        return CallerFacts(
            evaluation: evaluation, state: loaded.state, device: unavailable == nil ? device : nil, prints: prints,
            builtInSensorInaccessible: device != nil && builtIn && whereabouts.place.lidClosed)
    }
}
