// SPDX-License-Identifier: Apache-2.0
// What a door into the daemon hands over with each request: the socket's `Server` today, any other
// door (a D-Bus service) the same way. The door builds the caller's `PeerCredentials` from what the
// kernel or the bus says, never from what the client claims, and calls `Daemon.handle`.

import LocalAuthProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// What a running request may receive from its client besides the request itself.
public enum ClientSignal: Sendable, Equatable {
    case passcode(String)
    case fallback
    case cancel
}

/// The I/O of one request: events go out, client signals come in.
///
/// `send` is called on the daemon's executor and must not block; a door that has no client any more
/// simply drops events. Finishing `signals` ends nothing: cancelling the task that awaits
/// `Daemon.handle` ends the request (as `systemCancel`).
public struct RequestIO: Sendable {
    public let send: @Sendable (Event) -> Void
    public let signals: AsyncStream<ClientSignal>
    /// Receives each reader scan the request starts. An evaluation answers at libfprint's match
    /// callback, and the reader may still be finishing that scan (waiting for the finger to lift) for
    /// up to `EvaluationRun.finishGraceMs`: a door that must know when the reader is free again
    /// (fprintd's VerifyStop waits for it) awaits these.
    public let scanStarted: (@Sendable (Task<Void, Never>) -> Void)?
    public init(
        send: @escaping @Sendable (Event) -> Void, signals: AsyncStream<ClientSignal>,
        scanStarted: (@Sendable (Task<Void, Never>) -> Void)? = nil
    ) {
        self.send = send
        self.signals = signals
        self.scanStarted = scanStarted
    }
}

extension RequestIO {
    /// No events wanted, no client signals to give (the daemon's own requests, a door's questions).
    static var silent: RequestIO {
        RequestIO(send: { _ in }, signals: AsyncStream { $0.finish() })
    }
}

/// What a door other than the socket adds to a request: which reader and finger it names, and a
/// proof of presence it obtained itself. The socket's requests carry none of these.
public struct DoorContext: Sendable, Equatable {
    /// Presence proven outside the daemon, accepted instead of root for a user's enrolment.
    public enum Presence: Sendable, Equatable {
        /// polkit answered the enrolment action with a temporary authorisation: the person typed the
        /// account's password into the authentication agent for the calling process (`*_keep`).
        case polkitAuthentication(temporaryAuthorization: String)
    }

    /// `ReaderDeviceInfo.id` of the reader to use; nil: the daemon chooses.
    public var readerID: String?
    /// For an evaluation: only this finger counts.
    public var finger: FingerName?
    public var presence: Presence?
    /// For an enrolment on a reader that can identify: first a scan that must match no enrolled
    /// print of any account (fprintd's duplicate check), reported as one more enrol stage.
    public var refuseDuplicates: Bool
    /// Named in the audit record (`via=`): the door, e.g. "dbus".
    public var name: String?

    public init(
        readerID: String? = nil, finger: FingerName? = nil, presence: Presence? = nil, refuseDuplicates: Bool = false,
        name: String? = nil
    ) {
        self.readerID = readerID
        self.finger = finger
        self.presence = presence
        self.refuseDuplicates = refuseDuplicates
        self.name = name
    }
}

/// Wall-clock milliseconds; the policy core takes time as a parameter, the daemon reads it here.
@Sendable public func wallClockMs() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}
