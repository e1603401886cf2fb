// SPDX-License-Identifier: Apache-2.0
import FingerprintReader
import LocalAuthCore
import LocalAuthProtocol
import LocalAuthStore
import LocalAuthSystemd

/// What an evaluation (or `canEvaluate`) decides on, gathered once per request: the policy core's
/// facts, the user's stored state, the reader and prints biometrics would use, and the caller's
/// login session (the reuse scope).
struct CallerFacts {
    var evaluation: EvaluationFacts
    var state: UserAuthState
    /// The reader biometrics use; nil when none may be used (none present, a remote session, the
    /// lid closed on a built-in reader).
    var device: ReaderDeviceInfo?
    var prints: [StoredPrint]
    var session: CallerSession
    /// The session part of the reuse scope: the session's key, or one of its own, matching no
    /// other, for a connection whose creator is gone.
    var reuseKey: String
    /// The reader is there but built in and the lid is closed (Apple's `builtInSensorInaccessible`).
    var builtInSensorInaccessible = false

    /// The reader, the store and logind, asked in that order; one hop to logind at most. A door may
    /// name the reader (`readerID`) and the one finger that counts (`finger`).
    nonisolated(nonsending) static func gather(
        user: String, caller: PeerCredentials, tty: String?, parts: DaemonParts, readerID: String? = nil,
        finger: FingerName? = nil
    ) async -> CallerFacts {
        let (device, onlyOnAbsentReaders) = await parts.device(forUser: user, named: readerID)
        let loaded = parts.loadState(user)
        let prints = parts.enrolledPrints(user, on: device).filter { finger == nil || $0.finger == finger?.rawValue }
        let builtIn = device.map { !parts.configuration.externalReaderDrivers.contains($0.driver) } ?? false
        let session = await parts.sessions.view(of: caller.pid, uid: caller.uid, tty: tty, askLid: builtIn)
        // Checked after the lookups by pid: if the process that connected is gone, they may have
        // been about another process that has its pid now (issue 13, L4).
        let orphaned = !caller.isStillTheConnectingProcess
        let unavailable: String?
        if orphaned {
            unavailable = "the process that opened this connection has exited; connect again"
        } else if session.isRemote {
            unavailable = "the request comes from a remote session"
        } else if device == nil {
            unavailable = "no fingerprint reader is connected"
        } else if session.lidClosed {
            unavailable = "the laptop lid is closed and the reader is built in"
        } else {
            unavailable = nil
        }
        // An unplugged USB reader is named as such, unless something else keeps biometrics away anyway.
        let disconnected = onlyOnAbsentReaders && !session.isRemote && !(device != nil && session.lidClosed)
        let evaluation = EvaluationFacts(
            readerAvailable: unavailable == nil, readerUnavailableReason: unavailable,
            enrolledFingers: prints.map(\.finger), stateReadable: loaded.readable,
            enrolledOnlyOnAbsentReaders: disconnected)
        return CallerFacts(
            evaluation: evaluation, state: loaded.state, device: unavailable == nil ? device : nil, prints: prints,
            session: session, reuseKey: orphaned ? "orphaned:\(caller.pid):\(parts.clock())" : session.key,
            builtInSensorInaccessible: device != nil && builtIn && session.lidClosed)
    }
}
