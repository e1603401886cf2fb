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
///
/// Except behind a right's use: an evaluation (a PAM stack's sudo, su or screen locker, an app's
/// `evaluatePolicy`) takes precedence over a RIGHT_USE of the same user, which nobody may be
/// watching. The right's use is told to yield (it ends with `systemCancel`) and the evaluation waits
/// for the turn it leaves, so the touch the person gives for the prompt in front of them goes to
/// that prompt (issue 26; docs/security.md, "Rights").
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
        /// An evaluation: a right's use holding the reader yields to it rather than answer it busy.
        let precedesRightUse: Bool
        var continuation: CheckedContinuation<Turn, Never>?
        var answer: Turn?
        var timer: DeadlineTimer?
        init(wantsReader: Bool, precedesRightUse: Bool) {
            self.wantsReader = wantsReader
            self.precedesRightUse = precedesRightUse
        }

        /// Whether a holder with `label` makes this waiter busy now, rather than yield to it.
        func isBusy(behind label: RequestLabel) -> Bool { wantsReader && !(precedesRightUse && label.right != nil) }
    }

    private struct Line {
        var waiters: [Waiter] = []
        /// The request of this user that holds the reader now, if any.
        var readerHolder: RequestLabel?
        /// Ends the holder's request (`systemCancel`) when it is a right's use and an evaluation comes.
        var yieldReader: (@Sendable () -> Void)?
    }

    /// How long a request without a timeout of its own (list, delete, a passcode change) may wait
    /// for its user's turn.
    static let managementWaitMs: Int64 = 60_000

    /// Per user with a request running: the requests waiting behind it, in arrival order.
    private let lines = Mutex<[String: Line]>([:])

    /// Runs `body` once every earlier request for `user` has finished.
    nonisolated(nonsending) func serialize<T>(_ user: String, _ body: () async -> T) async -> T {
        _ = await enter(user, wantsReader: false, precedesRightUse: false, deadlineMs: nil)
        defer { leave(user) }
        return await body()
    }

    /// Runs `body` in `user`'s turn, or returns `refused` with why there was none. A request that
    /// `precedesRightUse` (an evaluation) makes a right's use that holds the reader yield to it.
    nonisolated(nonsending) func serialize<T>(
        _ user: String, wantsReader: Bool, precedesRightUse: Bool = false, deadlineMs: Int64?,
        _ body: () async -> T, refused: (Turn) -> T
    ) async -> T {
        let turn = await enter(
            user, wantsReader: wantsReader, precedesRightUse: precedesRightUse, deadlineMs: deadlineMs)
        guard turn == .granted else { return refused(turn) }
        defer { leave(user) }
        return await body()
    }

    /// Waits for `user`'s turn (then `leave` must follow), at most `deadlineMs` milliseconds.
    private nonisolated(nonsending) func enter(
        _ user: String, wantsReader: Bool, precedesRightUse: Bool, deadlineMs: Int64?
    ) async -> Turn {
        let waiter = Waiter(wantsReader: wantsReader, precedesRightUse: precedesRightUse)
        return await withCheckedContinuation { (continuation: CheckedContinuation<Turn, Never>) in
            var yieldReader: (@Sendable () -> Void)?
            let now: Turn? = lines.withLock { lines in
                guard var line = lines[user] else {
                    lines[user] = Line()
                    return .granted
                }
                if let holder = line.readerHolder {
                    if waiter.isBusy(behind: holder) { return .readerBusy(holder) }
                    if wantsReader { yieldReader = line.yieldReader }
                }
                waiter.continuation = continuation
                line.waiters.append(waiter)
                lines[user] = line
                return nil
            }
            if let now { return continuation.resume(returning: now) }
            yieldReader?()
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
            line.yieldReader = nil
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
    /// answered now rather than after it. `yield` ends a right's use; it is called at once when an
    /// evaluation of the account is waiting already, or later when one comes.
    func readerTaken(by label: RequestLabel, yield: (@Sendable () -> Void)? = nil) {
        var yieldNow = false
        let told: [(Waiter, CheckedContinuation<Turn, Never>)] = lines.withLock { lines in
            guard var line = lines[label.account] else { return [] }
            line.readerHolder = label
            line.yieldReader = label.right != nil ? yield : nil
            let busy = line.waiters.filter { $0.isBusy(behind: label) }
            line.waiters.removeAll { $0.isBusy(behind: label) }
            yieldNow = label.right != nil && line.waiters.contains { $0.wantsReader && $0.precedesRightUse }
            lines[label.account] = line
            return busy.compactMap { waiter in
                guard let continuation = waiter.continuation else { return nil }
                waiter.continuation = nil
                return (waiter, continuation)
            }
        }
        if yieldNow { yield?() }
        for (waiter, continuation) in told {
            waiter.timer?.cancel()
            continuation.resume(returning: .readerBusy(label))
        }
    }

    /// The request of `account` that held the reader let go of it.
    func readerReleased(by account: String) {
        lines.withLock { lines in
            lines[account]?.readerHolder = nil
            lines[account]?.yieldReader = nil
        }
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
