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
/// Every write is temp file → fsync → rename → fsync directory. Operations are serialised by a
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
    /// temporary files a crash left behind.
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

    /// Writes the record durably. Everything is taken from `state` except `domainState`, which
    /// only `addPrint`/`removePrint`/`removeAllPrints`/`resetState` change: a stale copy held by
    /// the caller across an enrolment must not roll it back. Throws `corruptState` rather than
    /// overwrite a corrupt record (only `resetState` may do that).
    public func saveState(_ state: UserAuthState, user: String) throws(StoreError) {
        try Validation.user(user)
        try lock.withLock { _ throws(StoreError) in
            var toWrite = state
            switch try load(user: user) {
            case .corrupt(let reason): throw .corruptState(reason)
            case .absent: toWrite.domainState = []
            case .ok(let current): toWrite.domainState = current.domainState
            }
            try writeRecord(toWrite, user: user)
        }
    }

    /// The administrator's reset: counters and lockouts cleared.
    ///
    /// - A readable record keeps its passcode hash, domain state and last-seen time.
    /// - A corrupt record is replaced by a fresh one; the passcode hash is kept only if the file
    ///   was ours (owner and mode) and its `passcodeHash` line is a well-formed yescrypt hash, and
    ///   the domain state is drawn anew when prints exist (the old value cannot be trusted, and a
    ///   change is the safe direction). Prints are kept; corrupt ones are set aside.
    /// - No record and no prints: nothing to do.
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

    // MARK: - Internals (called with the lock held)

    func userDirectory(_ user: String) -> String { usersDirectory + "/" + user }
    private func statePath(_ user: String) -> String { userDirectory(user) + "/" + Self.stateFileName }

    func notice(_ message: String) { onNotice?(message) }

    /// 32 bytes from the OS (`SystemRandomNumberGenerator` is `getrandom(2)` on Linux).
    static func freshDomainState() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    /// Why a file the store reads is not to be trusted, or nil: it must belong to the effective
    /// user (root for the daemon) and be readable by nobody else.
    func trustProblem(_ info: FileInfo) -> String? {
        if info.owner != Sys.effectiveUser { return "owned by uid \(info.owner), expected \(Sys.effectiveUser)" }
        if info.permissions & 0o077 != 0 {
            return "mode \(String(info.permissions, radix: 8)) is too permissive (expected 600)"
        }
        return nil
    }

    /// The same for a directory: ours, and writable by nobody else.
    private func directoryProblem(_ info: FileInfo) -> String? {
        if !info.isDirectory { return "not a directory" }
        if info.owner != Sys.effectiveUser { return "owned by uid \(info.owner), expected \(Sys.effectiveUser)" }
        if info.permissions & 0o022 != 0 {
            return "mode \(String(info.permissions, radix: 8)) is group or world writable"
        }
        return nil
    }

    /// Creates a missing directory (0700, durable) or checks an existing one. An existing one is
    /// never changed: a symbolic link, another owner or any permission for others is refused, as
    /// is a state directory that other users could move or replace (`TrustedPath`).
    private func prepareDirectory(_ path: String, isStateDirectory: Bool) throws(StoreError) {
        if isStateDirectory, let problem = try TrustedPath.ancestorProblem(of: path) {
            throw .unsafeStateDirectory("\(problem): another user could replace the state directory \(path)")
        }
        if try Sys.makeDirectory(path) {
            try syncParent(of: path)
            return
        }
        let what = isStateDirectory ? "the state directory" : "the directory"
        if let problem = try TrustedPath.privateDirectoryProblem(path, what: what) {
            throw .unsafeStateDirectory(problem)
        }
    }

    private func syncParent(of path: String) throws(StoreError) {
        guard let slash = path.lastIndex(of: "/") else { return try Sys.syncDirectory(".") }
        try Sys.syncDirectory(slash == path.startIndex ? "/" : String(path[..<slash]))
    }

    /// Checks the user's directory if it exists: false when missing, throws when unsafe.
    func checkUserDirectory(_ user: String) throws(StoreError) -> Bool {
        guard let info = try Sys.lstatInfo(userDirectory(user)) else { return false }
        if let problem = directoryProblem(info) {
            throw .unsafeStateDirectory("\(userDirectory(user)): \(problem)")
        }
        return true
    }

    func ensureUserDirectory(_ user: String) throws(StoreError) {
        if try checkUserDirectory(user) { return }
        if try Sys.makeDirectory(userDirectory(user)) { try Sys.syncDirectory(usersDirectory) }
    }

    /// Removes `.tmp-*` files left by a crash in the state, users and every user directory. They
    /// were never renamed into place, so nothing refers to them.
    private func removeStaleTemporaryFiles() throws(StoreError) {
        var directories = [stateDirectory, usersDirectory]
        for name in try Sys.listDirectory(usersDirectory) where Validation.isSafeName(name) {
            if let info = try Sys.lstatInfo(usersDirectory + "/" + name), info.isDirectory {
                directories.append(usersDirectory + "/" + name)
            }
        }
        for directory in directories {
            var removed = false
            for name in try Sys.listDirectory(directory) where name.hasPrefix(Self.tempPrefix) {
                try Sys.unlink(directory + "/" + name)
                removed = true
            }
            if removed {
                try Sys.syncDirectory(directory)
                notice("removed temporary files left in \(directory) by an interrupted write")
            }
        }
    }

    func load(user: String) throws(StoreError) -> StateLoad {
        guard try checkUserDirectory(user) else { return .absent }
        let path = statePath(user)
        switch Sys.readFile(path, limit: Self.maximumRecordSize) {
        case .missing:
            let printCount = try Sys.listDirectory(userDirectory(user)).filter {
                PrintRecord.parseFileName($0) != nil
            }.count
            if printCount == 0 { return .absent }
            return .corrupt("record missing while \(printCount) print file(s) exist")
        case .unreadable(let reason):
            return .corrupt("\(path): \(reason)")
        case .bytes(let bytes, let info):
            if let problem = trustProblem(info) {
                try setAsideCopy(bytes, user: user)
                return .corrupt("\(path): \(problem)")
            }
            switch StateRecord.decode(bytes) {
            case .success(let state): return .ok(state)
            case .failure(let error):
                try setAsideCopy(bytes, user: user)
                return .corrupt("\(path): \(error.reason)")
            }
        }
    }

    /// The state to build a change on: `.absent` is a fresh state; a corrupt record refuses.
    func writableState(user: String) throws(StoreError) -> UserAuthState {
        switch try load(user: user) {
        case .absent: return UserAuthState()
        case .ok(let state): return state
        case .corrupt(let reason): throw .corruptState(reason)
        }
    }

    /// Copies a corrupt record's bytes to `state.corrupt-<ms>` for the administrator, unless an
    /// identical copy exists (the daemon loads often; the disk must not fill with copies).
    private func setAsideCopy(_ bytes: [UInt8], user: String) throws(StoreError) {
        let directory = userDirectory(user)
        let prefix = Self.stateFileName + Self.corruptInfix
        for name in try Sys.listDirectory(directory) where name.hasPrefix(prefix) {
            if case .bytes(let copy, _) = Sys.readFile(directory + "/" + name, limit: Self.maximumRecordSize),
                copy == bytes
            {
                return
            }
        }
        let name = try unusedName(prefix: prefix, in: directory)
        try atomicWrite(bytes, directory: directory, name: name)
        notice("user \(Validation.quoted(user)): corrupt record copied to \(directory)/\(name)")
    }

    func unusedName(prefix: String, in directory: String) throws(StoreError) -> String {
        let stamp = Sys.nowMilliseconds()
        var name = "\(prefix)\(stamp)"
        var suffix = 1
        while try Sys.lstatInfo(directory + "/" + name) != nil {
            name = "\(prefix)\(stamp)-\(suffix)"
            suffix += 1
        }
        return name
    }

    private func writeRecord(_ state: UserAuthState, user: String) throws(StoreError) {
        let bytes = try StateRecord.encode(state)
        try ensureUserDirectory(user)
        try atomicWrite(bytes, directory: userDirectory(user), name: Self.stateFileName)
    }

    /// The user's readable prints in enrolment order, with corrupt ones set aside: the domain
    /// state is redrawn first (record before files, as in `addPrint`), then each is renamed.
    private func scanPrints(user: String) throws(StoreError) -> [PrintRecord.Decoded] {
        guard try checkUserDirectory(user) else { return [] }
        let directory = userDirectory(user)
        var good: [(decoded: PrintRecord.Decoded, name: String)] = []
        var corrupt: [(name: String, reason: String)] = []
        for name in try Sys.listDirectory(directory) {
            guard let (finger, deviceKey) = PrintRecord.parseFileName(name) else { continue }
            switch Sys.readFile(directory + "/" + name, limit: Self.maximumPrintFileSize) {
            case .missing: continue
            case .unreadable(let reason): corrupt.append((name, reason))
            case .bytes(let bytes, let info):
                if let problem = trustProblem(info) {
                    corrupt.append((name, problem))
                    continue
                }
                let plain: [UInt8]
                switch openIfSealing(bytes, user: user, name: name) {
                case .success(let opened): plain = opened
                case .failure(let error):
                    corrupt.append((name, error.reason))
                    continue
                }
                switch PrintRecord.decode(plain, expectedFinger: finger, expectedDeviceKey: deviceKey) {
                case .success(let decoded): good.append((decoded, name))
                case .failure(let error): corrupt.append((name, error.reason))
                }
            }
        }
        if !corrupt.isEmpty {
            var redrawn: [UInt8]? = nil
            if case .ok(var state) = try load(user: user) {
                state.domainState = Self.freshDomainState()
                try writeRecord(state, user: user)
                redrawn = state.domainState
            }
            for (name, reason) in corrupt {
                let aside = try unusedName(prefix: name + Self.corruptInfix, in: directory)
                try Sys.rename(directory + "/" + name, directory + "/" + aside)
                notice("user \(Validation.quoted(user)): set aside corrupt print file \(name) (\(reason)) as \(aside)")
            }
            try Sys.syncDirectory(directory)
            if let redrawn { try destroyRightsBoundToOtherSets(user: user, domainState: redrawn) }
        }
        return good.sorted { ($0.decoded.sequence, $0.name) < ($1.decoded.sequence, $1.name) }.map(\.decoded)
    }

    /// Redraws the domain state, makes the record durable, then unlinks the files and syncs.
    private func removeFiles(_ names: [String], user: String) throws(StoreError) -> UserAuthState {
        var state = try writableState(user: user)
        state.domainState = Self.freshDomainState()
        try writeRecord(state, user: user)
        let directory = userDirectory(user)
        for name in names {
            try Sys.unlink(directory + "/" + name)
            try writeHook?(.removed)
        }
        try Sys.syncDirectory(directory)
        try writeHook?(.directorySynced)
        try destroyRightsBoundToOtherSets(user: user, domainState: state.domainState)
        return state
    }

    /// Replaces `directory/name` with `bytes` so that after a crash at any point the file holds
    /// the old bytes or the new, never a mix: write a temporary file in the same directory, fsync
    /// it, rename it over the target, fsync the directory. A failed write removes its temporary
    /// file; a simulated crash (the hook throwing) leaves it, for `init` to clean.
    func atomicWrite(_ bytes: [UInt8], directory: String, name: String) throws(StoreError) {
        var random = SystemRandomNumberGenerator()
        let tempPath =
            "\(directory)/\(Self.tempPrefix)\(name)-\(Hex.encode((0..<8).map { _ in UInt8.random(in: 0...255, using: &random) }))"
        let targetPath = directory + "/" + name
        let fd = try Sys.call("create \(tempPath)") {
            open(tempPath, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        }
        var isOpen = true
        var crashed = false
        func step(_ s: WriteStep) throws(StoreError) {
            crashed = true
            try writeHook?(s)
            crashed = false
        }
        do {
            // The umask may have taken bits off 0600; set it exactly.
            try Sys.call("fchmod \(tempPath)") { fchmod(fd, 0o600) }
            try Sys.writeAll(fd, bytes, path: tempPath)
            try step(.tempWritten)
            try Sys.call("fsync \(tempPath)") { fsync(fd) }
            try step(.tempSynced)
            Sys.close(fd)
            isOpen = false
            try Sys.rename(tempPath, targetPath)
        } catch {
            if isOpen { Sys.close(fd) }
            if !crashed { _ = unlink(tempPath) }
            throw error
        }
        try writeHook?(.renamed)
        try Sys.syncDirectory(directory)
        try writeHook?(.directorySynced)
    }
}
