// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// Turns to run a request, per non-root uid: at most `requestsPerSecondPerUID` started per second
/// after a burst, at most `requestsPerUID` running at once (`Server.Limits`); root never waits.
/// A turn given back goes straight to the uid's longest waiter.
public final class RequestGate: Sendable {
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Bool, Never>
    }
    private struct State {
        var running: [UInt32: Int] = [:]
        var waiting: [UInt32: [Waiter]] = [:]
        var nextID: UInt64 = 0
        /// When each uid's next request may start (a token bucket kept as one instant).
        var nextSlot: [UInt32: ContinuousClock.Instant] = [:]
    }
    private let state = Mutex(State())
    private let clock = ContinuousClock()
    /// The time the pace is counted in: the clock's, or a test's (which then moves it itself, so
    /// that a loaded machine's delays between two steps cannot open a slot).
    private let now: @Sendable () -> ContinuousClock.Instant
    public let limit: Int
    public let interval: Duration
    public let burst: Int

    public init(
        limit: Int, perSecond: Int = 1_000_000, burst: Int = 0,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }
    ) {
        self.limit = limit
        self.interval = .nanoseconds(1_000_000_000 / max(1, perSecond))
        self.burst = burst
        self.now = now
    }

    /// Waits until `uid` may start another request; false when cancelled meanwhile.
    private func pace(uid: UInt32) async -> Bool {
        let now = self.now()
        let slot = state.withLock { s in
            let earliest = now - interval * burst
            if s.nextSlot.count > 1024 { s.nextSlot = s.nextSlot.filter { $0.value > earliest } }
            let slot = max(s.nextSlot[uid] ?? earliest, earliest)
            s.nextSlot[uid] = slot + interval
            return slot
        }
        guard slot > now else { return true }
        do {
            try await Task.sleep(until: slot, clock: clock)
            return true
        } catch {
            return false
        }
    }

    /// Waits for a turn: true once it is ours (give it back with `leave`), false when the task
    /// was cancelled first (no turn taken).
    public func enter(uid: UInt32) async -> Bool {
        guard uid != 0 else { return true }
        guard await pace(uid: uid) else { return false }
        let id = state.withLock { s in
            s.nextID += 1
            return s.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now: Bool? = state.withLock { s in
                    if Task.isCancelled { return false }
                    if s.running[uid, default: 0] < limit {
                        s.running[uid, default: 0] += 1
                        return true
                    }
                    s.waiting[uid, default: []].append(Waiter(id: id, continuation: continuation))
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter: Waiter? = state.withLock { s in
                guard let i = s.waiting[uid]?.firstIndex(where: { $0.id == id }) else { return nil }
                let w = s.waiting[uid]!.remove(at: i)
                if s.waiting[uid]!.isEmpty { s.waiting[uid] = nil }
                return w
            }
            waiter?.continuation.resume(returning: false)
        }
    }

    /// A turn now, when `uid` may start a request at once (within its pace and its running limit,
    /// none of its requests waiting): true once it is ours (give it back with `leave`); false takes
    /// nothing. For a door that must keep its calls in order (the D-Bus door).
    public func tryEnter(uid: UInt32) -> Bool {
        guard uid != 0 else { return true }
        let now = self.now()
        return state.withLock { s in
            let earliest = now - interval * burst
            let slot = max(s.nextSlot[uid] ?? earliest, earliest)
            guard slot <= now, s.running[uid, default: 0] < limit, s.waiting[uid] == nil else { return false }
            s.nextSlot[uid] = slot + interval
            s.running[uid, default: 0] += 1
            return true
        }
    }

    public func leave(uid: UInt32) {
        guard uid != 0 else { return }
        let next: Waiter? = state.withLock { s in
            if var queue = s.waiting[uid], !queue.isEmpty {
                let w = queue.removeFirst()
                s.waiting[uid] = queue.isEmpty ? nil : queue
                return w  // the turn passes on: running stays the same
            }
            s.running[uid, default: 1] -= 1
            if s.running[uid] == 0 { s.running[uid] = nil }
            return nil
        }
        next?.continuation.resume(returning: true)
    }

    /// Turns held and waiters queued for `uid` (for tests).
    public func counts(uid: UInt32) -> (running: Int, waiting: Int) {
        state.withLock { s in (s.running[uid] ?? 0, s.waiting[uid]?.count ?? 0) }
    }
}
