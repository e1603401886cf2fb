// SPDX-License-Identifier: Apache-2.0
// What a door into the daemon hands over with each request: the socket's `Server` today, any other
// door (a D-Bus service) the same way. The door builds the caller's `PeerCredentials` from what the
// kernel or the bus says, never from what the client claims, and calls `Daemon.handle`.

import LocalAuthCore
import LocalAuthProtocol
import Synchronization

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
/// simply drops events. Ending `signals` ends nothing: cancelling the task that awaits
/// `Daemon.handle` ends the request (as `systemCancel`).
public struct RequestIO: Sendable {
    public let send: @Sendable (Event) -> Void
    public let signals: ClientSignals
    /// Receives each reader scan the request starts, with the fingers it compares (`ScanStart`). An
    /// evaluation answers at libfprint's match callback, and the reader may still be finishing that
    /// scan (waiting for the finger to lift) for up to `EvaluationRun.finishGraceMs`: a door that must
    /// know when the reader is free again (fprintd's VerifyStop waits for it) awaits these. A door
    /// that speaks before the first scan (fprintd's VerifyStart answer and `VerifyFingerSelected`)
    /// learns here, from the one evaluation, what it would otherwise ask the daemon for.
    public let scanStarted: (@Sendable (ScanStart) -> Void)?
    /// Given what the daemon does once the answer is out (`AfterAnswer`), by a door that runs it
    /// right after it has written the answer (the socket's event loop). Without it the daemon
    /// starts that work itself as `handle` returns, where it can take the core from the thread
    /// that writes the answer (issue 29: the RESULT's write 100 µs later).
    public let whenAnswered: (@Sendable (@escaping @Sendable () -> Void) -> Void)?

    /// A door that offers each signal as it arrives (`ClientSignals.offer`).
    public init(
        send: @escaping @Sendable (Event) -> Void, signals: ClientSignals,
        scanStarted: (@Sendable (ScanStart) -> Void)? = nil,
        whenAnswered: (@Sendable (@escaping @Sendable () -> Void) -> Void)? = nil
    ) {
        self.send = send
        self.signals = signals
        self.scanStarted = scanStarted
        self.whenAnswered = whenAnswered
    }

    /// A door whose signals come as a stream: they are offered one by one as they arrive. The
    /// stream buffers what the door puts in it; a door a client can flood offers to a
    /// `ClientSignals` directly, as the socket does.
    public init(
        send: @escaping @Sendable (Event) -> Void, signals stream: AsyncStream<ClientSignal>,
        scanStarted: (@Sendable (ScanStart) -> Void)? = nil,
        whenAnswered: (@Sendable (@escaping @Sendable () -> Void) -> Void)? = nil
    ) {
        let signals = ClientSignals()
        Task {
            for await signal in stream { _ = signals.offer(signal) }
            signals.finish()
        }
        self.init(send: send, signals: signals, scanStarted: scanStarted, whenAnswered: whenAnswered)
    }
}

extension RequestIO {
    /// No events wanted, no client signals to give (the daemon's own requests, a door's questions).
    public static var silent: RequestIO {
        let signals = ClientSignals()
        signals.finish()
        return RequestIO(send: { _ in }, signals: signals)
    }
}

/// A reader scan an evaluation starts: the scan itself, and which of the account's prints it compares.
public struct ScanStart: Sendable {
    /// Ends once the reader has finished the scan (`RequestIO.scanStarted`).
    public let scan: Task<Void, Never>
    /// The enrolled fingers the scan may match (on this reader; only the one the door named, if it
    /// named one), in the store's order.
    public let fingers: [FingerName]
    /// The one finger verified; nil: the reader identifies among `fingers`.
    public let finger: FingerName?
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
    /// Where the caller asks from, being found already (`Daemon.lookUpPresence`): an evaluation for
    /// the same caller, account and service takes it instead of asking again.
    public var presenceLookup: PresenceLookup?

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

/// What a running request will take from its client, bounded whatever the client sends (issue 13,
/// H3): a CANCEL, a FALLBACK, and **one** PASSCODE per `passcodeNeeded` — a PASSCODE that was not
/// asked for, or that comes while one waits, is refused and not kept. CANCEL is taken before
/// anything else. Nothing a client sends grows the daemon's memory.
public final class ClientSignals: Sendable {
    private struct State {
        var cancel = false
        var fallback = false
        var passcode: String?
        /// The request asked for one passcode and has not taken it yet.
        var wantsPasscode = false
        var finished = false
        /// The task reading (`next`) was cancelled: it takes nothing more.
        var readerCancelled = false
        var waiter: CheckedContinuation<ClientSignal?, Never>?
        var refused = 0
    }
    private let state = Mutex(State())

    public init() {}

    /// The door hands over what its client sent; false when it is refused (not kept).
    @discardableResult
    public func offer(_ signal: ClientSignal) -> Bool {
        let (accepted, wake): (Bool, (CheckedContinuation<ClientSignal?, Never>, ClientSignal)?) = state.withLock { s in
            guard !s.finished else { return (false, nil) }
            switch signal {
            case .cancel: s.cancel = true
            case .fallback: s.fallback = true
            case .passcode(let text):
                guard s.wantsPasscode, s.passcode == nil else {
                    s.refused += 1
                    return (false, nil)
                }
                s.passcode = text
            }
            guard let waiter = s.waiter, let taken = Self.take(&s) else { return (true, nil) }
            s.waiter = nil
            return (true, (waiter, taken))
        }
        if let (waiter, taken) = wake { waiter.resume(returning: taken) }
        return accepted
    }

    /// The client is gone, or will send nothing more: a waiting `next` returns nil.
    public func finish() {
        let waiter = state.withLock { s in
            s.finished = true
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// The request asks for one passcode (it has sent, or is about to send, `passcodeNeeded`).
    func askForPasscode() { state.withLock { $0.wantsPasscode = true } }

    /// PASSCODE frames refused so far (for tests and figures).
    var refusedCount: Int { state.withLock { $0.refused } }

    /// The next signal, CANCEL first; nil once finished with nothing left, or when the calling task
    /// is cancelled.
    func next() async -> ClientSignal? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<ClientSignal?, Never>) in
                let now: ClientSignal?? = state.withLock { s in
                    if s.readerCancelled { return .some(nil) }
                    if let taken = Self.take(&s) { return .some(taken) }
                    if s.finished { return .some(nil) }
                    s.waiter = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = state.withLock { s in
                s.readerCancelled = true
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    /// Takes the most urgent pending signal.
    private static func take(_ s: inout State) -> ClientSignal? {
        if s.cancel {
            s.cancel = false
            return .cancel
        }
        if s.fallback {
            s.fallback = false
            return .fallback
        }
        if let passcode = s.passcode {
            s.passcode = nil
            s.wantsPasscode = false
            return .passcode(passcode)
        }
        return nil
    }
}

extension Notice {
    /// The core's typed notice as the `Event` a door receives through `RequestIO.send` (its
    /// `Phrase` rendered in English once, for old clients, beside the phrase itself).
    var event: Event {
        Event(
            kind, phrase.english, triesLeft: triesLeft.map(Int64.init), delayMs: delayMs, hint: hint,
            finger: finger?.rawValue, phrase: phrase)
    }
}

/// Wall-clock milliseconds; the policy core takes time as a parameter, the daemon reads it here.
@Sendable public func wallClockMs() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}
