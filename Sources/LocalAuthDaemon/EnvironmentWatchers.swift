// SPDX-License-Identifier: Apache-2.0
import FingerprintReader
import LocalAuthCore
import LocalAuthStore
import Synchronization

/// Who watches whose environment (WATCH: the `LAEnvironment` observers of a process), and waking
/// them when it may have changed.
///
/// A watcher is told *that* its environment may have changed, never what: it asks CAN_EVALUATE
/// again, under the rules every request meets. It hears of
/// - its own account's record, when what `LAEnvironment.State` shows of it changes (a finger
///   enrolled or deleted, biometrics locked or unlocked, the passcode set or removed); a write that
///   changes only a counter wakes no one, and another account's writes never reach it;
/// - what every account shares: a reader plugged in or unplugged, the laptop's lid opened or
///   closed (polled while anyone watches: logind does not signal `LidClosed`).
///
/// `notify` closures are called from any thread (inside the store's lock, from the reader's hotplug
/// stream, from the lid's poll): they must not block. The socket's door coalesces them (`Watch`).
final class EnvironmentWatchers: Sendable {
    /// What of a user's record `LAEnvironment.State` shows.
    struct RecordFacts: Equatable {
        let biometryLocked: Bool
        let passcodeSet: Bool
        let domainState: [UInt8]

        init(_ record: UserAuthState) {
            biometryLocked = record.biometryLocked
            passcodeSet = record.passcodeHash != nil
            domainState = record.domainState
        }
    }

    private struct Watcher {
        /// The watched account's name; nil for a uid without one (it hears only what all share).
        let user: String?
        let notify: @Sendable () -> Void
    }

    private struct State {
        var watchers: [UInt64: Watcher] = [:]
        var next: UInt64 = 0
        /// The last record written per watched account; nil until its first write (which wakes).
        var facts: [String: RecordFacts] = [:]
        /// The lid's poll, running while anyone watches.
        var lidPoll: Task<Void, Never>?
    }

    private let state = Mutex(State())
    /// The lid now, when a built-in reader is present (nil: nothing a lid could cover).
    private let lidProbe: @Sendable () async -> Bool?
    let lidPollMs: Int

    init(lidPollMs: Int = 2000, lidProbe: @escaping @Sendable () async -> Bool? = { nil }) {
        self.lidPollMs = lidPollMs
        self.lidProbe = lidProbe
    }

    /// Watchers now (for tests and figures).
    var count: Int { state.withLock { $0.watchers.count } }

    /// Registers a watcher of `user`'s environment; `remove` it with the returned id.
    func add(user: String?, notify: @escaping @Sendable () -> Void) -> UInt64 {
        state.withLock { s in
            s.next += 1
            s.watchers[s.next] = Watcher(user: user, notify: notify)
            if s.lidPoll == nil { s.lidPoll = Task { [weak self] in await self?.pollLid() } }
            return s.next
        }
    }

    func remove(_ id: UInt64) {
        state.withLock { s in
            guard let gone = s.watchers.removeValue(forKey: id) else { return }
            if let user = gone.user, !s.watchers.values.contains(where: { $0.user == user }) {
                s.facts[user] = nil
            }
        }
    }

    /// The store wrote `user`'s record (`EnrollmentStore.onRecordWritten`): wakes that account's
    /// watchers when what they see of it changed.
    func recordWritten(user: String, record: UserAuthState) {
        let wake: [@Sendable () -> Void] = state.withLock { s in
            let watching = s.watchers.values.filter { $0.user == user }
            guard !watching.isEmpty else { return [] }
            let facts = RecordFacts(record)
            guard s.facts[user] != facts else { return [] }
            s.facts[user] = facts
            return watching.map(\.notify)
        }
        for notify in wake { notify() }
    }

    /// Something every account shares changed (a reader came or went, the lid): wakes everyone.
    func everyoneMayHaveChanged() {
        for notify in state.withLock({ $0.watchers.values.map(\.notify) }) { notify() }
    }

    /// Follows libfprint's hotplug events until the reader shuts down.
    func follow(_ hotplug: AsyncStream<HotplugEvent>) {
        Task { [weak self] in
            for await _ in hotplug { self?.everyoneMayHaveChanged() }
        }
    }

    /// Asks the lid at once and every `lidPollMs` while anyone watches; a change wakes everyone.
    private func pollLid() async {
        var last: Bool?? = nil
        while true {
            let stop = state.withLock { s in
                if s.watchers.isEmpty { s.lidPoll = nil }
                return s.watchers.isEmpty
            }
            if stop { return }
            let now = await lidProbe()
            if let last, last != now { everyoneMayHaveChanged() }
            last = .some(now)
            try? await Task.sleep(for: .milliseconds(lidPollMs))
        }
    }
}

extension Daemon {
    /// WATCH, for a door: `notify` is called each time the environment of `caller`'s own account may
    /// have changed (see `EnvironmentWatchers`), from any thread; it must not block. The caller's
    /// account is its uid's, from the kernel's credentials: no door can name another.
    public nonisolated func watchEnvironment(of caller: PeerCredentials, notify: @escaping @Sendable () -> Void)
        -> UInt64
    {
        parts.watchers.add(user: caller.userName, notify: notify)
    }

    /// Ends a watch `watchEnvironment` began.
    public nonisolated func stopWatchingEnvironment(_ id: UInt64) {
        parts.watchers.remove(id)
    }
}
