// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// Requests that read and write one user's state run one at a time, first come first served;
/// requests for different users do not wait for each other.
final class UserQueue: Sendable {
    /// Per user with a request running: the requests waiting behind it, in arrival order.
    private let waiting = Mutex<[String: [CheckedContinuation<Void, Never>]]>([:])

    /// Runs `body` once every earlier request for `user` has finished.
    nonisolated(nonsending) func serialize<T>(_ user: String, _ body: () async -> T) async -> T {
        await enter(user)
        defer { leave(user) }
        return await body()
    }

    private nonisolated(nonsending) func enter(_ user: String) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let free = waiting.withLock { waiting in
                guard waiting[user] != nil else {
                    waiting[user] = []
                    return true
                }
                waiting[user]!.append(continuation)
                return false
            }
            if free { continuation.resume() }
        }
    }

    private func leave(_ user: String) {
        let next: CheckedContinuation<Void, Never>? = waiting.withLock { waiting in
            guard var queue = waiting[user], !queue.isEmpty else {
                waiting[user] = nil
                return nil
            }
            let next = queue.removeFirst()
            waiting[user] = queue
            return next
        }
        next?.resume()
    }

    /// Requests waiting for `user`'s turn; nil when none runs (for tests).
    func waiting(for user: String) -> Int? { waiting.withLock { $0[user]?.count } }
}
