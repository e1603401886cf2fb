// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// Live connections per uid, for the per-uid limit.
final class ConnectionCounter: Sendable {
    private struct Counts {
        var perUID: [UInt32: Int] = [:]
        var total = 0
        var accepted = 0
        /// Requests started whose RESULT has not been written yet.
        var requests = 0
        /// Connections that became watches (WATCH), per uid: counted in `total`, not in `perUID`.
        var watches: [UInt32: Int] = [:]
        /// `quietAfterBurst`'s waiter, resumed by the close that ends a burst.
        var burstWaiter: BurstWaiter?
        /// Since when no connection has been open (the last close, or the start); nil while one is.
        var idleSince: ContinuousClock.Instant? = ContinuousClock.now
        /// `idleSince()`'s waiter, resumed by the close that leaves none open.
        var idleWaiter: CheckedContinuation<ContinuousClock.Instant?, Never>?
    }
    private struct BurstWaiter {
        let since: Int
        let burst: Int
        let openAtMost: Int
        let continuation: CheckedContinuation<Int?, Never>
    }
    private let counts = Mutex(Counts())

    var total: Int { counts.withLock { $0.total } }

    /// Connections open now, and accepted since start.
    var openAndAccepted: (open: Int, accepted: Int) { counts.withLock { ($0.total, $0.accepted) } }

    func acquire(uid: UInt32, limits: Server.Limits) -> Bool {
        counts.withLock { c in
            guard c.total < limits.connections else { return false }
            if uid != 0 && c.perUID[uid, default: 0] >= limits.connectionsPerUID { return false }
            c.perUID[uid, default: 0] += 1
            c.total += 1
            c.accepted += 1
            c.idleSince = nil
            return true
        }
    }

    /// A connection of `uid` becomes a watch: it gives back its place among the uid's connections
    /// (so that watching never takes a place the uid's authentication needs) and takes one among its
    /// watches, at most `limit` for a non-root uid. False, and nothing changed, when they are full.
    func becomeWatch(uid: UInt32, limit: Int) -> Bool {
        counts.withLock { c in
            if uid != 0 && c.watches[uid, default: 0] >= limit { return false }
            c.watches[uid, default: 0] += 1
            c.perUID[uid, default: 1] -= 1
            if c.perUID[uid] == 0 { c.perUID[uid] = nil }
            return true
        }
    }

    /// A watch's connection closed.
    func releaseWatch(uid: UInt32) {
        let waiters = counts.withLock { c in
            c.watches[uid, default: 1] -= 1
            if c.watches[uid] == 0 { c.watches[uid] = nil }
            return Self.closed(&c)
        }
        Self.resume(waiters)
    }

    /// Connections open now that are not watches: those a stop waits for (a watch is never done).
    var servingTotal: Int { counts.withLock { $0.total - $0.watches.values.reduce(0, +) } }

    /// Watches open now, of `uid` (for tests).
    func watches(uid: UInt32) -> Int { counts.withLock { $0.watches[uid] ?? 0 } }

    /// Requests started whose RESULT has not been written (`Server.drain`).
    var requestsInFlight: Int { counts.withLock { $0.requests } }
    func requestStarted() { counts.withLock { $0.requests += 1 } }
    func requestEnded() { counts.withLock { $0.requests -= 1 } }

    func release(uid: UInt32) {
        let waiters = counts.withLock { c in
            c.perUID[uid, default: 1] -= 1
            if c.perUID[uid] == 0 { c.perUID[uid] = nil }
            return Self.closed(&c)
        }
        Self.resume(waiters)
    }

    /// A connection closed: the waiters its close resumes, taken out of `c`.
    private static func closed(_ c: inout Counts) -> (BurstWaiter?, accepted: Int, idle: IdleWaiter?) {
        c.total -= 1
        var idle: IdleWaiter? = nil
        if c.total == 0 {
            let now = ContinuousClock.now
            c.idleSince = now
            if let waiter = c.idleWaiter { idle = IdleWaiter(continuation: waiter, since: now) }
            c.idleWaiter = nil
        }
        return (burstEnded(&c), c.accepted, idle)
    }

    private struct IdleWaiter {
        let continuation: CheckedContinuation<ContinuousClock.Instant?, Never>
        let since: ContinuousClock.Instant
    }

    private static func resume(_ waiters: (BurstWaiter?, accepted: Int, idle: IdleWaiter?)) {
        waiters.0?.continuation.resume(returning: waiters.accepted)
        waiters.idle?.continuation.resume(returning: waiters.idle?.since)
    }

    /// Since when no connection has been open: at once when none is, else once the close that leaves
    /// none open comes (no timer, no polling: `IdleExit`). nil when cancelled. One waiter at a time.
    func idleSince() async -> ContinuousClock.Instant? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<ContinuousClock.Instant?, Never>) in
                let now: ContinuousClock.Instant?? = counts.withLock { c in
                    if Task.isCancelled { return .some(nil) }
                    if let since = c.idleSince { return .some(since) }
                    c.idleWaiter = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = counts.withLock { c in
                defer { c.idleWaiter = nil }
                return c.idleWaiter
            }
            waiter?.resume(returning: nil)
        }
    }

    /// Since when no connection has been open now; nil while one is.
    var idleSinceNow: ContinuousClock.Instant? { counts.withLock { $0.idleSince } }

    /// Waits until at least `burst` connections were accepted after the `since`-th and at most
    /// `openAtMost` are open: the close that ends a burst. The number accepted then; nil when
    /// cancelled. One waiter at a time.
    func quietAfterBurst(since: Int, burst: Int, openAtMost: Int) async -> Int? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Int?, Never>) in
                let now: Int?? = counts.withLock { c in
                    if Task.isCancelled { return .some(nil) }
                    if c.accepted - since >= burst && c.total <= openAtMost { return .some(c.accepted) }
                    c.burstWaiter = BurstWaiter(
                        since: since, burst: burst, openAtMost: openAtMost, continuation: continuation)
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter: BurstWaiter? = counts.withLock { c in
                defer { c.burstWaiter = nil }
                return c.burstWaiter
            }
            waiter?.continuation.resume(returning: nil)
        }
    }

    private static func burstEnded(_ c: inout Counts) -> BurstWaiter? {
        guard let w = c.burstWaiter, c.accepted - w.since >= w.burst, c.total <= w.openAtMost else { return nil }
        c.burstWaiter = nil
        return w
    }
}
