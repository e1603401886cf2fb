// SPDX-License-Identifier: Apache-2.0
import FingerprintReader
import LocalAuthCore
import LocalAuthProtocol
import LocalAuthStore
import LocalAuthSystemd
import Synchronization

/// What every use case works with: the reader, the store, the configuration, the audit log, the
/// clock and logind. Shared by value; each part is safe to use from any task.
struct DaemonParts: Sendable {
    let reader: FingerprintReader?
    let store: EnrollmentStore
    let configuration: DaemonConfiguration
    /// Set when started with `--virtual-reader`: the virtual device's control socket.
    let virtualReaderSocket: String?
    let audit: AuditLog
    let clock: @Sendable () -> Int64
    /// Now on the boot's clock, under this boot's id (`BootClock`); nil when the boot id is unreadable.
    let bootClock: @Sendable () -> BootInstant?
    let sessions: LoginSessions
    /// Each user's requests one at a time.
    let userQueue: UserQueue
    /// Which request holds the reader: another one that needs it is told so at once.
    let lease: ReaderLease
    /// Passcodes are hashed at most at a person's pace, per user.
    let pacer = HashPacer()
    /// Rights authorized for a process (`RightGrants`): its key operations then ask no one again.
    let grants = RightGrants()
    /// Who watches whose environment (WATCH, `LAEnvironment` observers).
    let watchers: EnvironmentWatchers
    /// What an answer need not wait for, done once it is given (`Daemon.finishAfterAnswer`).
    let afterAnswer = AfterAnswer()

    init(
        reader: FingerprintReader?, store: EnrollmentStore, configuration: DaemonConfiguration,
        virtualReaderSocket: String?, audit: AuditLog, clock: @escaping @Sendable () -> Int64,
        bootClock: @escaping @Sendable () -> BootInstant?, sessions: LoginSessions
    ) {
        self.reader = reader
        self.store = store
        self.configuration = configuration
        self.virtualReaderSocket = virtualReaderSocket
        self.audit = audit
        self.clock = clock
        self.bootClock = bootClock
        self.sessions = sessions
        let queue = UserQueue()
        userQueue = queue
        lease = ReaderLease(queue: queue)
        let external = configuration.externalReaderDrivers
        watchers = EnvironmentWatchers { [reader] in
            // The lid matters only over a built-in reader (`isBuiltIn`).
            guard await (reader?.devices() ?? []).contains(where: { !external.contains($0.driver) }) else { return nil }
            return await sessions.lidClosed()
        }
    }

    /// The reader biometrics use: the one named (`ReaderDeviceInfo.id`, nil when it is not present),
    /// else the first one libfprint reports.
    nonisolated(nonsending) func currentDevice(_ named: String? = nil) async -> ReaderDeviceInfo? {
        let present = await reader?.devices() ?? []
        if let named { return present.first { $0.id == named } }
        let device = present.first
        if device == nil { reader?.lookForReadersIfNone() }  // a replugged reader is found again
        return device
    }

    /// The reader a user's evaluation uses, with several readers: the one a door names; else the
    /// first present reader that holds one of the user's prints; else the first present reader.
    /// `onlyOnAbsentReaders`: the user's prints are all on readers that are not connected. `prints`:
    /// the user's prints on that reader (`enrolledPrints`), from the same read of the store.
    nonisolated(nonsending) func device(forUser user: String, named: String?) async -> (
        device: ReaderDeviceInfo?, onlyOnAbsentReaders: Bool, prints: [StoredPrint]
    ) {
        if let named {
            let device = await currentDevice(named)
            return (device, false, enrolledPrints(user, on: device))
        }
        let present = await reader?.devices() ?? []
        if present.isEmpty { reader?.lookForReadersIfNone() }
        let all = try? store.allPrints(user: user)
        let keys = Set((all ?? []).map(\.deviceKey))
        let holding = present.first { keys.contains($0.storageKey) }
        let device = holding ?? present.first
        // Every print file is opened (and unsealed) once per evaluation, not once more for the reader's.
        let prints =
            all.map { all in all.filter { $0.deviceKey == device?.storageKey } } ?? enrolledPrints(user, on: device)
        return (device, holding == nil && !keys.isEmpty, prints)
    }

    /// A reader the laptop's lid covers: any driver not named in `external-reader-drivers`.
    func isBuiltIn(_ device: ReaderDeviceInfo?) -> Bool {
        device.map { !configuration.externalReaderDrivers.contains($0.driver) } ?? false
    }

    /// A user's stored state; unreadable (corrupt, or the read failed) is said, never read as empty.
    struct LoadedState {
        var state: UserAuthState
        var readable: Bool
        /// Unreadable because a newer localauthd wrote it (a downgrade), not damaged.
        var fromNewerVersion = false
    }

    func loadState(_ user: String) -> LoadedState {
        do {
            switch try store.loadState(user: user) {
            case .absent: return LoadedState(state: UserAuthState(), readable: true)
            case .ok(let state): return LoadedState(state: state, readable: true)
            case .corrupt(let why):
                if (try? store.newerStateVersion(user: user)) != nil {
                    audit.notice(
                        "stored state of \(user) was written by a newer version of localauthd (\(why)); biometrics and "
                            + "passcode refused for \(user) until that version runs again; the record is kept")
                    return LoadedState(state: UserAuthState(), readable: false, fromNewerVersion: true)
                }
                audit.notice(
                    "stored state of \(user) is unreadable (\(why)); biometrics refused until `localauthctl lockout reset --user \(user)`"
                )
                return LoadedState(state: UserAuthState(), readable: false)
            }
        } catch {
            audit.notice("cannot read the state of \(user): \(error)")
            return LoadedState(state: UserAuthState(), readable: false)
        }
    }

    /// Writes `new` durably, auditing a lockout set or lifted since `previous` (what is on disk).
    /// Every path that counts writes through here; false (with a notice) when the write failed.
    /// `syncAfterAnswer` (a match): a record that only relaxes is written now and synced and
    /// renamed after the answer (`afterAnswer`; `EnrollmentStore.saveState(_:user:syncLaterIfRelaxing:)`).
    func record(_ new: UserAuthState, user: String, previous: UserAuthState, syncAfterAnswer: Bool = false) -> Bool {
        do {
            try store.saveState(new, user: user, syncLaterIfRelaxing: syncAfterAnswer)
        } catch {
            audit.notice("cannot record the state of \(user): \(error)")
            return false
        }
        // A match's record synced and renamed, the record replaced closed (its blocks freed): beside
        // the actor (the next request's questions to logind go on meanwhile), under the store's lock,
        // which anything that reads that user's state takes first (ADR 0004's one exception).
        let (store, audit) = (self.store, self.audit)
        afterAnswer.addBesideTheActor { for failure in store.commitPendingRecords() { audit.notice(failure) } }
        if new.biometryLocked != previous.biometryLocked {
            audit.lockout(user: user, new.biometryLocked ? "biometry locked" : "biometry unlocked")
        }
        // An attempt is counted (and its delay armed) before the passcode is checked; a correct one
        // lifts the delay again, and says so.
        if new.passcodeLockedUntilMs != previous.passcodeLockedUntilMs {
            if new.passcodeLockedUntilMs > 0 {
                let seconds = (new.passcodeLockedUntilMs - max(clock(), new.lastSeenMs) + 999) / 1000
                audit.lockout(
                    user: user, "passcode delayed for \(seconds) s after \(new.passcodeFailures) passcode attempts")
            } else if previous.passcodeLockedUntilMs > max(clock(), new.lastSeenMs) {
                audit.lockout(user: user, "passcode delay lifted")
            }
        }
        return true
    }

    /// The user's prints for `device`; none without a device.
    func enrolledPrints(_ user: String, on device: ReaderDeviceInfo?) -> [StoredPrint] {
        guard let device else { return [] }
        return (try? store.prints(user: user, deviceKey: device.storageKey)) ?? []
    }
}

/// The reader, held by one request at a time. A request that needs it while another holds it is
/// told so at once, with whose request that is: never two requests silently waiting on one reader,
/// and never "Place your finger" for a touch that would answer someone else's request.
///
/// And shared: one account's evaluations hold it at most `shareMs` in any window of `2 × shareMs`
/// (`reader-share-seconds`, 60 s by default), so a hog — one of its own processes re-asking without
/// end — cannot keep it from every other account; within its share an evaluation keeps it to the end.
final class ReaderLease: Sendable {
    struct Holder: Sendable, Equatable {
        let id: UInt64
        let label: RequestLabel
        /// Ends the holder's request: a right's use yields the reader to an evaluation (`UserQueue`).
        var yield: (@Sendable () -> Void)? = nil

        static func == (a: Holder, b: Holder) -> Bool { a.id == b.id && a.label == b.label }
    }

    /// What `take` gives.
    enum Grant: Equatable, Sendable {
        /// Taken, for at most this long (the rest of the account's share); nil: no limit (enrolment).
        case taken(forMs: Int64?)
        case busy(Holder)
        /// The account has had its share; `retryInMs` until it has some again.
        case shareUsed(retryInMs: Int64)
    }

    /// One request's time on the reader, or several of one account's merged (`keptPerAccount`).
    private struct Use {
        var id: UInt64
        let account: String
        /// When the first of its uses began.
        var fromMs: Int64
        /// When the last of them began; `toMs` is when it ended.
        var lastFromMs: Int64
        var toMs: Int64? = nil
        /// The time on the reader of the uses before the last, all between `fromMs` and `lastFromMs`.
        var earlierMs: Int64 = 0

        init(id: UInt64, account: String, fromMs: Int64) {
            self.id = id
            self.account = account
            self.fromMs = fromMs
            self.lastFromMs = fromMs
        }

        /// Its time on the reader from `start` on, at `nowMs`: exact when it began after `start`;
        /// for merged uses that `start` cuts, never less than the truth (at most the earlier
        /// uses' span after `start`), so an account never gets more than its share.
        func timeMs(since start: Int64, nowMs: Int64) -> Int64 {
            let last = (toMs ?? nowMs) - max(lastFromMs, start)
            let earlier = fromMs >= start ? earlierMs : min(earlierMs, max(0, lastFromMs - start))
            return max(0, last) + earlier
        }
    }

    /// The finished uses kept per account; past that its two neighbouring ones closest together
    /// are merged. Without a bound, the list grew by one per evaluation in the window (2 min by
    /// default): 1000 authentications held a 98 kB array, kept for good (issue 29).
    static let keptPerAccount = 32

    private struct State {
        var holder: Holder?
        var nextID: UInt64 = 1
        var uses: [Use] = []
    }
    private let state = Mutex(State())
    /// Told when a request takes the reader or lets go of it: the same user's waiting requests
    /// that want the reader are answered at once.
    private let queue: UserQueue

    init(queue: UserQueue) { self.queue = queue }

    /// A fresh id for a request that may hold the reader.
    func newID() -> UInt64 {
        state.withLock { s in
            defer { s.nextID += 1 }
            return s.nextID
        }
    }

    /// Takes the reader for `holder` at `nowMs`, within its account's share when `shareMs` is given.
    func take(_ holder: Holder, nowMs: Int64, shareMs: Int64?) -> Grant {
        let grant: Grant = state.withLock { s in
            if let current = s.holder, current.id != holder.id { return .busy(current) }
            var allowed: Int64?
            if let shareMs {
                s.uses.removeAll { ($0.toMs ?? nowMs) <= nowMs - 2 * shareMs }
                if s.uses.capacity > 4 * s.uses.count + 64 { s.uses = Array(s.uses) }  // gives the rest back
                let mine = s.uses.filter { $0.account == holder.label.account }
                let used = mine.reduce(Int64(0)) { sum, use in
                    sum + use.timeMs(since: nowMs - 2 * shareMs, nowMs: nowMs)
                }
                guard used < shareMs else {
                    // The oldest use leaves the window first: then the account has room again.
                    let oldest = mine.map(\.fromMs).min() ?? nowMs
                    return .shareUsed(retryInMs: max(oldest + 2 * shareMs - nowMs, 1000))
                }
                allowed = shareMs - used
            }
            s.holder = holder
            // Only what counts toward a share is kept (an enrolment, root's, does not).
            if shareMs != nil {
                s.uses.append(Use(id: holder.id, account: holder.label.account, fromMs: nowMs))
                Self.mergeIfMany(&s.uses, account: holder.label.account)
            }
            return .taken(forMs: allowed)
        }
        if case .taken = grant { queue.readerTaken(by: holder.label, yield: holder.yield) }
        return grant
    }

    /// Frees the reader if `id` holds it, at `nowMs`.
    func release(_ id: UInt64, nowMs: Int64) {
        let freed: Holder? = state.withLock { s in
            guard let current = s.holder, current.id == id else { return nil }
            s.holder = nil
            if let index = s.uses.lastIndex(where: { $0.id == id }) { s.uses[index].toMs = nowMs }
            return current
        }
        if let freed { queue.readerReleased(by: freed.label.account) }
    }

    /// Who holds the reader now (for tests).
    var holder: Holder? { state.withLock { $0.holder } }

    /// Uses kept now, of every account (for tests).
    var usesKept: Int { state.withLock { $0.uses.count } }

    /// Past `keptPerAccount` finished uses of `account`, merges the two neighbouring ones closest
    /// in time (the later one stands for both), so that a window's start cuts at most a short
    /// stretch of merged uses.
    private static func mergeIfMany(_ uses: inout [Use], account: String) {
        let finished = uses.indices.filter { uses[$0].account == account && uses[$0].toMs != nil }
        guard finished.count > keptPerAccount else { return }
        let spans = (1..<finished.count).map { uses[finished[$0]].toMs! - uses[finished[$0 - 1]].fromMs }
        let best = 1 + spans.indices.min { spans[$0] < spans[$1] }!
        let (older, newer) = (uses[finished[best - 1]], finished[best])
        uses[newer].earlierMs += older.earlierMs + older.toMs! - older.lastFromMs
        uses[newer].fromMs = older.fromMs
        uses.remove(at: finished[best - 1])
    }
}

/// Passcodes are hashed at most once a second per user (issue 13, H3): a person does not type
/// faster, and a client that answers every `passcodeNeeded` at once (repeating a wrong passcode,
/// which counts once) would otherwise keep a core hashing yescrypt without end.
final class HashPacer: Sendable {
    static let intervalMs: Int64 = 1000
    private let next = Mutex<[String: Int64]>([:])

    /// Books the next hash of `user`; returns how long to wait before it (0: now).
    func reserve(_ user: String, nowMs: Int64) -> Int64 {
        next.withLock { next in
            let at = max(nowMs, next[user] ?? 0)
            next[user] = at + Self.intervalMs
            if next.count > 4096 { next = next.filter { $0.value > nowMs } }  // bounded: forget the past
            return at - nowMs
        }
    }
}

/// Work an answer need not wait for: done by `Daemon.finishAfterAnswer` in a task of its own once
/// the request's answer is on its way, and at the latest before the daemon's next request
/// begins, so that nothing a later request reads is left undone. Only what is safe to lose in a
/// crash goes here: the sync of a match's record (the previous record is the strict side), the
/// password-use record of a finger (an older use is the strict side, ADR 0007).
final class AfterAnswer: Sendable {
    private let work = Mutex<[@Sendable () -> Void]>([])
    private let beside = Mutex<[@Sendable () -> Void]>([])

    /// Work for the daemon's actor.
    func add(_ body: @escaping @Sendable () -> Void) { work.withLock { $0.append(body) } }

    /// Work that keeps its order by the store's lock and may run beside the actor (a match's record
    /// synced and renamed).
    func addBesideTheActor(_ body: @escaping @Sendable () -> Void) { beside.withLock { $0.append(body) } }

    var isEmpty: Bool { work.withLock { $0.isEmpty } }
    var isEmptyBesideTheActor: Bool { beside.withLock { $0.isEmpty } }

    /// Runs (and forgets) what `add` added, in order.
    func run() { Self.drain(work) }

    /// Runs (and forgets) what `addBesideTheActor` added, in order.
    func runBesideTheActor() { Self.drain(beside) }

    private static func drain(_ list: borrowing Mutex<[@Sendable () -> Void]>) {
        let added = list.withLock { w in
            defer { w.removeAll() }
            return w
        }
        for body in added { body() }
    }
}
