// SPDX-License-Identifier: Apache-2.0
import FingerprintReader
import LocalAuthProtocol
import Synchronization

/// Requests that read and write one user's state run one at a time, first come first served;
/// requests for different users do not wait for each other.
///
/// Nobody waits silently behind the reader: a request that wants the reader is answered at once
/// (`readerBusy`) when a request of the same user holds it, and the moment one starts to, instead
/// of waiting for the user's turn. And nobody waits past their own deadline (`timedOut`).
final class UserQueue: Sendable {
    /// Why a request got no turn.
    enum Turn: Equatable, Sendable {
        case granted
        /// A request of the same user holds the reader (its label says whose).
        case readerBusy(RequestLabel)
        /// The deadline passed while waiting.
        case timedOut
    }

    private final class Waiter: @unchecked Sendable {  // its fields change only under the queue's lock
        let wantsReader: Bool
        var continuation: CheckedContinuation<Turn, Never>?
        var answer: Turn?
        var timer: DeadlineTimer?
        init(wantsReader: Bool) { self.wantsReader = wantsReader }
    }

    private struct Line {
        var waiters: [Waiter] = []
        /// The request of this user that holds the reader now, if any.
        var readerHolder: RequestLabel?
    }

    /// How long a request without a timeout of its own (list, delete, a passcode change) may wait
    /// for its user's turn.
    static let managementWaitMs: Int64 = 60_000

    /// Per user with a request running: the requests waiting behind it, in arrival order.
    private let lines = Mutex<[String: Line]>([:])

    /// Runs `body` once every earlier request for `user` has finished.
    nonisolated(nonsending) func serialize<T>(_ user: String, _ body: () async -> T) async -> T {
        _ = await enter(user, wantsReader: false, deadlineMs: nil)
        defer { leave(user) }
        return await body()
    }

    /// Runs `body` in `user`'s turn, or returns `refused` with why there was none.
    nonisolated(nonsending) func serialize<T>(
        _ user: String, wantsReader: Bool, deadlineMs: Int64?, _ body: () async -> T, refused: (Turn) -> T
    ) async -> T {
        let turn = await enter(user, wantsReader: wantsReader, deadlineMs: deadlineMs)
        guard turn == .granted else { return refused(turn) }
        defer { leave(user) }
        return await body()
    }

    /// Waits for `user`'s turn (then `leave` must follow), at most `deadlineMs` milliseconds.
    private nonisolated(nonsending) func enter(_ user: String, wantsReader: Bool, deadlineMs: Int64?) async -> Turn {
        let waiter = Waiter(wantsReader: wantsReader)
        return await withCheckedContinuation { (continuation: CheckedContinuation<Turn, Never>) in
            let now: Turn? = lines.withLock { lines in
                guard var line = lines[user] else {
                    lines[user] = Line()
                    return .granted
                }
                if wantsReader, let holder = line.readerHolder { return .readerBusy(holder) }
                waiter.continuation = continuation
                line.waiters.append(waiter)
                lines[user] = line
                return nil
            }
            if let now { return continuation.resume(returning: now) }
            if let deadlineMs {
                let timer = DeadlineTimer(ms: deadlineMs) { [weak self] in
                    self?.answer(waiter, of: user, with: .timedOut)
                }
                lines.withLock { _ in if waiter.continuation != nil { waiter.timer = timer } }
            }
        }
    }

    func leave(_ user: String) {
        let next: (Waiter, CheckedContinuation<Turn, Never>)? = lines.withLock { lines in
            guard var line = lines[user], !line.waiters.isEmpty else {
                lines[user] = nil
                return nil
            }
            let next = line.waiters.removeFirst()
            line.readerHolder = nil
            lines[user] = line
            guard let continuation = next.continuation else { return nil }
            next.continuation = nil
            return (next, continuation)
        }
        guard let (waiter, continuation) = next else { return }
        waiter.timer?.cancel()
        continuation.resume(returning: .granted)
    }

    /// A request of `label.account` took the reader: its waiting requests that want the reader are
    /// answered now rather than after it.
    func readerTaken(by label: RequestLabel) {
        let told: [(Waiter, CheckedContinuation<Turn, Never>)] = lines.withLock { lines in
            guard var line = lines[label.account] else { return [] }
            line.readerHolder = label
            let (busy, rest) = (line.waiters.filter(\.wantsReader), line.waiters.filter { !$0.wantsReader })
            line.waiters = rest
            lines[label.account] = line
            return busy.compactMap { waiter in
                guard let continuation = waiter.continuation else { return nil }
                waiter.continuation = nil
                return (waiter, continuation)
            }
        }
        for (waiter, continuation) in told {
            waiter.timer?.cancel()
            continuation.resume(returning: .readerBusy(label))
        }
    }

    /// The request of `account` that held the reader let go of it.
    func readerReleased(by account: String) {
        lines.withLock { lines in lines[account]?.readerHolder = nil }
    }

    private func answer(_ waiter: Waiter, of user: String, with turn: Turn) {
        let continuation: CheckedContinuation<Turn, Never>? = lines.withLock { lines in
            guard let continuation = waiter.continuation else { return nil }
            waiter.continuation = nil
            lines[user]?.waiters.removeAll { $0 === waiter }
            return continuation
        }
        continuation?.resume(returning: turn)
    }

    /// Requests waiting for `user`'s turn; nil when none runs (for tests).
    func waiting(for user: String) -> Int? { lines.withLock { $0[user]?.waiters.count } }
}
