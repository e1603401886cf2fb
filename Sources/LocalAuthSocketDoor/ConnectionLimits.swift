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
            return true
        }
    }

    /// Requests started whose RESULT has not been written (`Server.drain`).
    var requestsInFlight: Int { counts.withLock { $0.requests } }
    func requestStarted() { counts.withLock { $0.requests += 1 } }
    func requestEnded() { counts.withLock { $0.requests -= 1 } }

    func release(uid: UInt32) {
        counts.withLock { c in
            c.perUID[uid, default: 1] -= 1
            if c.perUID[uid] == 0 { c.perUID[uid] = nil }
            c.total -= 1
        }
    }
}
