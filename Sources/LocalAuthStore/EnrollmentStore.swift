// SPDX-License-Identifier: Apache-2.0
import Glibc
import LocalAuthCore
import LocalAuthCrypto
import Synchronization

import enum LocalAuthProtocol.FingerName

/// Per-user records and enrolled prints under a state directory, written crash-safely.
///
/// Layout (see `docs/adr/0002-storage-layout.md`):
///
///     <state>/                      0700
///       users/                      0700
///         <user>/                   0700
///           state                   0600  the UserAuthState record
///           <finger>@<device>.print 0600  one enrolled print
///           *.corrupt-<ms>          0600  corrupt files kept for the administrator
///
/// Every write is temp file → fsync → rename → fsync directory (the last step skipped only for a
/// record that relaxes the one on disk: `saveState`). Operations are serialised by a
/// mutex, so one store may be shared; two stores (or processes) on one directory are not supported.
public final class EnrollmentStore: Sendable {
    /// The daemon's default state directory.
    public static let defaultStateDirectory = "/var/lib/localauthd"

    /// True for device storage keys the store accepts; the same rule as user names, since both
    /// become file names.
    public static func isValidDeviceKey(_ key: String) -> Bool { Validation.isSafeName(key) }

    /// The state directory given at init.
    public let stateDirectory: String
    /// Told about repairs worth a log line (a print set aside, a record copied aside). Never receives passcodes or print bytes.
    public let onNotice: (@Sendable (String) -> Void)?

    /// Test hook: called at each step of every durable write; throwing simulates a crash there
    /// (the write stops and leaves its temporary file, as a killed process would).
    let writeHook: (@Sendable (WriteStep) throws(StoreError) -> Void)?

    let usersDirectory: String
    let lock = Mutex(())
    /// The locked `daemon.lock` of an exclusive store, else -1.
    private let directoryLock = Mutex<Int32>(-1)
    /// The machine's data key once `init` has opened it (nil: a store that does not seal, as in
    /// the store's own unit tests; the daemon always seals). Set once, inside `init`.
    let sealing = Mutex<(sealer: Sealer, method: SealingMethod)?>(nil)
    /// The accounts whose directory has been swept of temporary files since the store opened.
    let sweptUsers = Mutex<Set<String>>([])
    /// Records written but not yet synced and renamed, by user (`saveState(_:user:syncLaterIfRelaxing:)`).
    let pendingRecords = Mutex<[String: PendingRecord]>([:])
    /// Records renamed over and still open, closed by `commitPendingRecords()` (`atomicWrite`).
    let retiredRecords = Mutex<[Int32]>([])

    /// Whether opening this store made the machine's key (a new state directory): a start's event,
    /// which the daemon logs at info level, not a notice.
    public var madeMachineKey: Bool { madeKey.withLock { $0 } }
    let madeKey = Mutex(false)

    /// Told of each record written (every change of a user's counters, lockout, passcode or domain
    /// state goes through one), with the record as written: the daemon's environment watchers
    /// (`LAEnvironment` observers). Called inside the store's lock: it must not block or use the store.
    public func onRecordWritten(_ body: @escaping @Sendable (_ user: String, _ record: UserAuthState) -> Void) {
        recordWritten.withLock { $0.body = body }
    }
    /// The hook as a field of a struct in the lock, never a `Mutex` of the bare function type:
    /// reading that with `withLock { $0 }` re-abstracted the function value and wrote it back
    /// wrapped in two more thunks, so the n-th record written called through 2n frames and left
    /// two more 32-byte objects behind: 64 bytes an authentication for good, and a stack that
    /// overflows after enough of them (issue 29; `DeviceHandlerSlots` had the same).
    struct RecordHook: Sendable {
        var body: (@Sendable (String, UserAuthState) -> Void)?
    }
    let recordWritten = Mutex(RecordHook())

    /// How the state directory is sealed; nil when this store does not seal.
    public var sealingMethod: SealingMethod? { sealing.withLock { $0?.method } }
    var sealer: Sealer? { sealing.withLock { $0?.sealer } }

    static let stateFileName = "state"
    static let tempPrefix = ".tmp-"
    static let corruptInfix = ".corrupt-"
    /// A record is a few hundred bytes; anything much larger is not ours.
    static let maximumRecordSize = 16 * 1024
    static let maximumPrintFileSize = StoredPrint.maximumDataSize + 4096

    /// Opens (creating with mode 0700 if missing) and checks the state directory, then removes
    /// the temporary files a crash left in it (in an account's directory: at the account's first
    /// use; in `users/`: `removeStaleTemporaryFilesInUsersDirectory()`, once the daemon serves).
    ///
    /// Refuses (`unsafeStateDirectory`), and leaves as it is, a state directory that is a symbolic
    /// link or not a directory, is not owned by the effective user (root for the daemon), gives
    /// group or others any permission, or lies below a directory another user can change.
    ///
    /// `exclusive`: hold the directory's lock (`daemon.lock`, `flock(2)`) for the store's life, and
    /// refuse (`inUse`, naming the holder's pid) while another process holds it: the daemon's
    /// store, so that a second daemon on the same directory stops before it touches anything.
    ///
    /// With `sealing`, the prints and rights are sealed to the machine (`docs/adr/0006-sealing.md`):
    /// the key is opened (or, for a new state directory, made), plain prints left by an older
    /// version are sealed once, and a state directory sealed elsewhere fails with `.sealing`.
    public convenience init(
        stateDirectory: String, exclusive: Bool = false, sealing: SealingConfiguration? = nil,
        onNotice: (@Sendable (String) -> Void)? = nil
    ) throws(StoreError) {
        try self.init(
            stateDirectory: stateDirectory, exclusive: exclusive, sealing: sealing, onNotice: onNotice, writeHook: nil)
    }

    init(
        stateDirectory: String, exclusive: Bool = false, sealing sealingConfiguration: SealingConfiguration? = nil,
        onNotice: (@Sendable (String) -> Void)?, writeHook: (@Sendable (WriteStep) throws(StoreError) -> Void)?
    ) throws(StoreError) {
        var directory = stateDirectory
        while directory.count > 1 && directory.hasSuffix("/") { directory.removeLast() }
        guard !directory.isEmpty else { throw .unsafeStateDirectory("empty path") }
        self.stateDirectory = directory
        self.onNotice = onNotice
        self.writeHook = writeHook
        usersDirectory = directory + "/users"
        let held = try lock.withLock { _ throws(StoreError) in
            try prepareDirectory(directory, isStateDirectory: true)
            // Before anything is changed: a second daemon must not remove the first one's files.
            let held = exclusive ? try DirectoryLock.acquire(directory) : -1
            do throws(StoreError) {
                try prepareDirectory(usersDirectory, isStateDirectory: false)
                try removeStaleTemporaryFiles()
                if let sealingConfiguration { try openSealing(sealingConfiguration) }
            } catch {
                if held >= 0 { Sys.close(held) }
                throw error
            }
            return held
        }
        directoryLock.withLock { $0 = held }
    }

    deinit {
        directoryLock.withLock { if $0 >= 0 { Sys.close($0) } }
    }

    #if DEBUG
        /// Debug builds only: a store that calls `pause` after every step of every durable write
        /// (temporary file written, synced, renamed over the target, a file unlinked, the directory
        /// synced). The daemon's kill-point tests make it stop the process there and copy the state
        /// directory: each copy is what a `kill -9` at that point would leave behind.
        ///
        /// `duringOpen`: pause at the writes `init` makes too (the sealing key, the migration of
        /// plain prints); otherwise only once the store is open.
        public static func pausingAtWriteSteps(
            stateDirectory: String, exclusive: Bool = false, sealing: SealingConfiguration? = nil,
            duringOpen: Bool = false, onNotice: (@Sendable (String) -> Void)?, pause: @escaping @Sendable () -> Void
        ) throws(StoreError) -> EnrollmentStore {
            let armed = Atomic<Bool>(duringOpen)
            let store = try EnrollmentStore(
                stateDirectory: stateDirectory, exclusive: exclusive, sealing: sealing, onNotice: onNotice
            ) {
                _ throws(StoreError) in if armed.load(ordering: .relaxed) { pause() }
            }
            armed.store(true, ordering: .relaxed)
            return store
        }
    #endif

    // MARK: - Records

    /// The user's record: `.absent` for a new user, `.corrupt` when the record cannot be trusted.
    ///
    /// A record that is missing while prints exist is corrupt too: the store writes the record
    /// before the first print, so only deletion by hand gets there. A corrupt record is copied
    /// aside (once per distinct content) as `state.corrupt-<ms>` and left in place, so every later
    /// load, including after a restart, fails closed until `resetState(user:)`.
    public func loadState(user: String) throws(StoreError) -> StateLoad {
        try Validation.user(user)
        return try lock.withLock { _ throws(StoreError) in try load(user: user) }
    }

    /// Writes the record. Everything is taken from `state` except `domainState`, which
    /// only `addPrint`/`removePrint`/`removeAllPrints`/`resetState` change: a stale copy held by
    /// the caller across an enrolment must not roll it back. Throws `corruptState` rather than
    /// overwrite a corrupt record (only `resetState` may do that).
    ///
    /// Durability: the file is always whole and renamed into place before this returns (a `kill -9`
    /// after it keeps the new record). A record that raises anything (an attempt counted, a
    /// lockout, a delay, a new passcode) is also durable against power loss (the directory is
    /// synced). One that only relaxes the record on disk (`LockoutRules.onlyRelaxes`: a match's
    /// reset, an attempt given back) skips the directory's fsync: power lost before the file
    /// system commits the rename leaves the older, stricter record (docs/reliability.md).
    public func saveState(_ state: UserAuthState, user: String) throws(StoreError) {
        try saveState(state, user: user, syncLaterIfRelaxing: false)
    }

    /// The same; with `syncLaterIfRelaxing`, a record that only relaxes the one on disk
    /// (`LockoutRules.onlyRelaxes`) is created and written now, which is where a full file system
    /// refuses it, and synced and renamed into place by `commitPendingRecords()`, or before
    /// anything else of that user is read or written (`checkUserDirectory`). Until then the
    /// previous record, the strict side, stays in place; a crash or a failed sync keeps it. For a
    /// match, whose answer need not wait for the sync (docs/reliability.md, issue 29).
    public func saveState(_ state: UserAuthState, user: String, syncLaterIfRelaxing: Bool) throws(StoreError) {
        try Validation.user(user)
        try lock.withLock { _ throws(StoreError) in
            var toWrite = state
            var durable = true
            switch try load(user: user) {
            case .corrupt(let reason): throw .corruptState(reason)
            case .absent: toWrite.domainState = []
            case .ok(let current):
                toWrite.domainState = current.domainState
                durable = !LockoutRules.onlyRelaxes(toWrite, from: current)
            }
            if syncLaterIfRelaxing && !durable {
                try prepareRecord(toWrite, user: user)
            } else {
                try writeRecord(toWrite, user: user, syncDirectory: durable)
            }
        }
    }

    /// Syncs and renames into place every record `saveState(_:user:syncLaterIfRelaxing:)` left
    /// written but not yet synced, and closes the records renamed over. A record that cannot be
    /// synced or renamed is dropped (the previous one stays: the strict side); says which, for the log.
    public func commitPendingRecords() -> [String] {
        Self.$isCommittingAfterAnswer.withValue(true) { lock.withLock { _ in commitPending(user: nil) } }
    }

    /// True inside `commitPendingRecords()`: the one store write a daemon makes beside its actor
    /// (ADR 0004), for a debug write hook that checks where writes run.
    @TaskLocal public static var isCommittingAfterAnswer = false

    /// The administrator's reset: counters and lockouts cleared.
    ///
    /// - A readable record keeps its passcode hash, domain state and last-seen time.
    /// - A corrupt record is replaced by a fresh one; the passcode hash is kept only if the file
    ///   was ours (owner and mode) and its `passcodeHash` line is a well-formed yescrypt hash, and
    ///   the domain state is drawn anew when prints exist (the old value cannot be trusted, and a
    ///   change is the safe direction). Prints are kept; corrupt ones are set aside.
    /// - No record and no prints: nothing to do.
    /// - A record a newer version wrote (`newerStateVersion`): refused with `.newerState`, the file kept.
    public func resetState(user: String) throws(StoreError) {
        try Validation.user(user)
        try lock.withLock { _ throws(StoreError) in
            let prints = try scanPrints(user: user)
            switch try load(user: user) {
            case .absent:
                return
            case .ok(let current):
                try writeRecord(
                    UserAuthState(
                        lastSeenMs: current.lastSeenMs, passcodeHash: current.passcodeHash,
                        domainState: current.domainState), user: user)
            case .corrupt:
                // A newer version's record is not damage: resetting it would destroy what that version
                // kept (a lockout, the passcode) when it runs again.
                if let version = try newerVersion(user: user) { throw .newerState(statePath(user), version: version) }
                var salvaged: String? = nil
                if case .bytes(let bytes, let info) = Sys.readFile(statePath(user), limit: Self.maximumRecordSize),
                    trustProblem(info) == nil
                {
                    salvaged = StateRecord.salvagePasscodeHash(bytes)
                }
                let domainState = prints.isEmpty ? [] : Self.freshDomainState()
                try ensureUserDirectory(user)
                try writeRecord(UserAuthState(passcodeHash: salvaged, domainState: domainState), user: user)
                try destroyRightsBoundToOtherSets(user: user, domainState: domainState)
                notice(
                    "reset corrupt record of user \(Validation.quoted(user)); passcode "
                        + (salvaged == nil ? "cleared" : "kept"))
            }
        }
    }

    /// The record version, when a newer localauthd wrote the user's record (ours, its seal whole);
    /// nil otherwise. `loadState` reports such a record as `.corrupt` (refused, fail closed).
    public func newerStateVersion(user: String) throws(StoreError) -> Int? {
        try Validation.user(user)
        return try lock.withLock { _ throws(StoreError) in try newerVersion(user: user) }
    }

    private func newerVersion(user: String) throws(StoreError) -> Int? {
        guard try checkUserDirectory(user),
            case .bytes(let bytes, let info) = Sys.readFile(statePath(user), limit: Self.maximumRecordSize),
            trustProblem(info) == nil
        else { return nil }
        return StateRecord.newerVersion(bytes)
    }

    /// Users with a directory in the store, sorted.
    public func users() throws(StoreError) -> [String] {
        try lock.withLock { _ throws(StoreError) in
            var names: [String] = []
            for name in try Sys.listDirectory(usersDirectory) where Validation.isSafeName(name) {
                if let info = try Sys.lstatInfo(usersDirectory + "/" + name), info.isDirectory { names.append(name) }
            }
            return names
        }
    }

    /// Removes the `.tmp-*` files left in `users/` itself; the number removed. Not at open: listing
    /// `users/` grows with the accounts (3.5 ms at 10,000, docs/performance.md), so the daemon calls
    /// this once it serves.
    ///
    /// Safe at any time, beside any request or write. No write of the store makes its temporary
    /// file in `users/`: each is made beside its target, in the state directory, the key's
    /// directory or an account's directory, never `users/`. So a `.tmp-` name there is a leftover
    /// of something else (a file copied in by hand, a version to come), never a write in progress.
    /// Until it is removed it is never taken for an account: a name starting with `.` is none
    /// (`Validation.isSafeName`). The listing is made without the store's lock, so that no request
    /// waits for it; what it found is removed under the lock.
    @discardableResult
    public func removeStaleTemporaryFilesInUsersDirectory() throws(StoreError) -> Int {
        let found = try Sys.listDirectory(usersDirectory).filter { $0.hasPrefix(Self.tempPrefix) }
        guard !found.isEmpty else { return 0 }
        return try lock.withLock { _ throws(StoreError) in try removeTemporaryFiles(found, in: usersDirectory) }
    }

    // MARK: - Prints

    /// The user's prints for one reader, in enrolment order. Corrupt print files are set aside
    /// (see `allPrints`).
    public func prints(user: String, deviceKey: String) throws(StoreError) -> [StoredPrint] {
        try Validation.user(user)
        try Validation.deviceKey(deviceKey)
        return try lock.withLock { _ throws(StoreError) in
            try scanPrints(user: user).map(\.print).filter { $0.deviceKey == deviceKey }
        }
    }

    /// All the user's prints, every reader, in enrolment order. A corrupt print file is moved
    /// aside to `<name>.corrupt-<ms>` and skipped, with a notice; since the set of fingers changed,
    /// the domain state is redrawn first (when the record is readable).
    public func allPrints(user: String) throws(StoreError) -> [StoredPrint] {
        try Validation.user(user)
        return try lock.withLock { _ throws(StoreError) in try scanPrints(user: user).map(\.print) }
    }

    /// Enrols a print and returns the user's state with its new domain state.
    ///
    /// Order: the record with a freshly drawn domain state is made durable first, then the print
    /// file. A crash in between leaves a changed domain state and an unchanged set (a spurious
    /// change, which only makes apps ask again), never a changed set under the old domain state.
    public func addPrint(_ print: StoredPrint, user: String) throws(StoreError) -> UserAuthState {
        try Validation.user(user)
        try Validation.deviceKey(print.deviceKey)
        guard (1...StoredPrint.maximumDataSize).contains(print.data.count) else {
            throw .invalidArgument("print data must be 1 to \(StoredPrint.maximumDataSize) bytes")
        }
        return try lock.withLock { _ throws(StoreError) in
            let existing = try scanPrints(user: user)
            guard
                !existing.contains(where: { $0.print.finger == print.finger && $0.print.deviceKey == print.deviceKey })
            else { throw .alreadyExists }
            var state = try writableState(user: user)
            state.domainState = Self.freshDomainState()
            try ensureUserDirectory(user)
            try writeRecord(state, user: user)
            let sequence = (existing.map(\.sequence).max() ?? 0) + 1
            let name = PrintRecord.fileName(finger: print.finger, deviceKey: print.deviceKey)
            try atomicWrite(
                sealedIfSealing(PrintRecord.encode(print, sequence: sequence), user: user, name: name),
                directory: userDirectory(user), name: name)
            try destroyRightsBoundToOtherSets(user: user, domainState: state.domainState)
            return state
        }
    }

    /// Deletes one print and returns the user's state with its new domain state; `notFound` if that
    /// finger is not enrolled on that reader. Record first, then the unlink (see `addPrint`).
    public func removePrint(user: String, deviceKey: String, finger: FingerName) throws(StoreError) -> UserAuthState {
        try Validation.user(user)
        try Validation.deviceKey(deviceKey)
        return try lock.withLock { _ throws(StoreError) in
            let existing = try scanPrints(user: user)
            guard existing.contains(where: { $0.print.finger == finger && $0.print.deviceKey == deviceKey }) else {
                throw .notFound
            }
            return try removeFiles(
                [PrintRecord.fileName(finger: finger, deviceKey: deviceKey)], user: user)
        }
    }

    /// Deletes every print of the user, on every reader. With none enrolled nothing changes and
    /// the current state is returned.
    public func removeAllPrints(user: String) throws(StoreError) -> UserAuthState {
        try Validation.user(user)
        return try lock.withLock { _ throws(StoreError) in
            let existing = try scanPrints(user: user)
            guard !existing.isEmpty else { return try writableState(user: user) }
            return try removeFiles(
                existing.map { PrintRecord.fileName(finger: $0.print.finger, deviceKey: $0.print.deviceKey) },
                user: user)
        }
    }
}
