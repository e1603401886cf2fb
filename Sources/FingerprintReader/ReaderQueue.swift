// SPDX-License-Identifier: Apache-2.0
// A FIFO async lock: libfprint answers a second concurrent operation with BUSY, so reader work waits its turn.

import LocalAuthProtocol
import Synchronization

/// First-come, first-served exclusive access to one reader. A waiter whose task is cancelled leaves the queue.
final class ReaderQueue: Sendable {
    /// One `acquire()` call; its state changes only under the queue's lock.
    private final class Waiter: @unchecked Sendable {
        enum State {
            case starting
            case waiting(CheckedContinuation<Bool, Never>)
            case granted
            case cancelled
        }
        var state = State.starting
    }

    private struct State {
        var busy = false
        var waiters: [Waiter] = []
    }

    private let state = Mutex(State())

    /// Whether an operation holds the reader now.
    var isBusy: Bool { state.withLock { $0.busy } }

    /// Waits until the reader is ours; throws `.cancelled` if the task is cancelled first.
    func acquire() async throws(ReaderFailure) {
        let waiter = Waiter()
        let granted = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let outcome: Bool? = state.withLock { queue in
                    // The cancellation handler may have run before this body.
                    if case .cancelled = waiter.state { return false }
                    if !queue.busy {
                        queue.busy = true
                        waiter.state = .granted
                        return true
                    }
                    waiter.state = .waiting(continuation)
                    queue.waiters.append(waiter)
                    return nil
                }
                if let outcome { continuation.resume(returning: outcome) }
            }
        } onCancel: {
            let continuation: CheckedContinuation<Bool, Never>? = state.withLock { queue in
                switch waiter.state {
                case .starting:
                    waiter.state = .cancelled
                    return nil
                case .waiting(let continuation):
                    waiter.state = .cancelled
                    queue.waiters.removeAll { $0 === waiter }
                    return continuation
                case .granted, .cancelled:
                    return nil
                }
            }
            continuation?.resume(returning: false)
        }
        if !granted { throw .cancelled }
    }

    /// Hands the reader to the next waiter, or frees it.
    func release() {
        let next: CheckedContinuation<Bool, Never>? = state.withLock { queue in
            while !queue.waiters.isEmpty {
                let waiter = queue.waiters.removeFirst()
                if case .waiting(let continuation) = waiter.state {
                    waiter.state = .granted
                    return continuation
                }
            }
            queue.busy = false
            return nil
        }
        next?.resume(returning: true)
    }
}
