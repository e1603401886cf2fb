// SPDX-License-Identifier: Apache-2.0
// What a door into the daemon hands over with each request: the socket's `Server` today, any other
// door (a D-Bus service) the same way. The door builds the caller's `PeerCredentials` from what the
// kernel or the bus says, never from what the client claims, and calls `Daemon.handle`.

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

    /// A door that offers each signal as it arrives (`ClientSignals.offer`).
    public init(send: @escaping @Sendable (Event) -> Void, signals: ClientSignals) {
        self.send = send
        self.signals = signals
    }

    /// A door whose signals come as a stream: they are offered one by one as they arrive. The
    /// stream buffers what the door puts in it; a door a client can flood offers to a
    /// `ClientSignals` directly, as the socket does.
    public init(send: @escaping @Sendable (Event) -> Void, signals stream: AsyncStream<ClientSignal>) {
        let signals = ClientSignals()
        Task {
            for await signal in stream { _ = signals.offer(signal) }
            signals.finish()
        }
        self.init(send: send, signals: signals)
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

/// Wall-clock milliseconds; the policy core takes time as a parameter, the daemon reads it here.
@Sendable public func wallClockMs() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}
