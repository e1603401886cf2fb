// SPDX-License-Identifier: Apache-2.0
import LocalAuthProtocol

/// Where a reuse window applies: never across users, services or login sessions.
struct ReuseScope: Hashable, Sendable {
    var user: String
    var service: String
    var session: String
}

/// The last success per reuse scope: memory only, so a restart or a suspend never extends a reuse
/// window (`touchIDAuthenticationAllowableReuseDuration`).
struct ReuseWindows {
    private var lastSuccess: [ReuseScope: Int64] = [:]

    subscript(scope: ReuseScope) -> Int64? { lastSuccess[scope] }

    mutating func record(_ scope: ReuseScope, atMs: Int64) { lastSuccess[scope] = atMs }

    /// After a lockout reset: the user's windows go with it.
    mutating func forget(user: String) { lastSuccess = lastSuccess.filter { $0.key.user != user } }

    /// Before sleep, or on an administrator's request.
    mutating func forgetAll() { lastSuccess.removeAll() }
}

/// The input feeds of the evaluations running now, so that sleep can cancel them.
struct RunningEvaluations {
    private var feeds: [Int: AsyncStream<EvaluationRun.Input>.Continuation] = [:]
    private var nextID = 0

    var count: Int { feeds.count }

    /// Registers a run's feed; returns the key to remove it with.
    mutating func add(_ feed: AsyncStream<EvaluationRun.Input>.Continuation) -> Int {
        let id = nextID
        nextID += 1
        feeds[id] = feed
        return id
    }

    mutating func remove(_ id: Int) { feeds[id] = nil }

    /// Ends every running evaluation with `code` (`systemCancel` before sleep).
    func cancelAll(_ code: ResultCode) {
        for feed in feeds.values { feed.yield(.policy(.cancelled(code))) }
    }
}
