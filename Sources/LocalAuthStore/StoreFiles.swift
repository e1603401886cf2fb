// SPDX-License-Identifier: Apache-2.0
import Glibc
import LocalAuthCore

/// The files under the state directory, for `EnrollmentStore`: trust checks, directories, the
/// record's load and write, print scans, and the one durable write every change goes through. All
/// called with the store's lock held.
extension EnrollmentStore {
    func userDirectory(_ user: String) -> String { usersDirectory + "/" + user }
    func statePath(_ user: String) -> String { userDirectory(user) + "/" + Self.stateFileName }

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

    /// `users/<user>/<name>`, read and decoded as every record is: unreadable or not ours
    /// (`trustProblem`) is refused; a `sealed` kind must also open under the machine key for its
    /// place (`openIfSealing`). `.corrupt` says why, without the path (`loadRecord` adds it).
    func readRecord<Value>(
        user: String, name: String, limit: Int, sealed: Bool, decode: ([UInt8]) -> Result<Value, FormatError>
    ) -> RecordLoad<Value> {
        var plain: [UInt8]
        switch Sys.readFile(userDirectory(user) + "/" + name, limit: limit) {
        case .missing: return .absent
        case .unreadable(let reason): return .corrupt(reason)
        case .bytes(let bytes, let info):
            if let problem = trustProblem(info) { return .corrupt(problem) }
            plain = bytes
        }
        if sealed {
            switch openIfSealing(plain, user: user, name: name) {
            case .success(let opened): plain = opened
            case .failure(let error): return .corrupt(error.reason)
            }
        }
        switch decode(plain) {
        case .success(let value): return .ok(value)
        case .failure(let error): return .corrupt(error.reason)
        }
    }

    /// The one loader of a user's records (but the user record, which sets a damaged copy aside:
    /// `load(user:)`): `readRecord`, with the path in what `.corrupt` says.
    func loadRecord<Value>(
        user: String, name: String, limit: Int, sealed: Bool, decode: ([UInt8]) -> Result<Value, FormatError>
    ) -> RecordLoad<Value> {
        switch readRecord(user: user, name: name, limit: limit, sealed: sealed, decode: decode) {
        case .corrupt(let why): .corrupt("\(userDirectory(user))/\(name): \(why)")
        case let read: read
        }
    }

    /// The same for a directory: ours, and writable by nobody else.
    func directoryProblem(_ info: FileInfo) -> String? {
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
    func prepareDirectory(_ path: String, isStateDirectory: Bool) throws(StoreError) {
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

    func syncParent(of path: String) throws(StoreError) {
        guard let slash = path.lastIndex(of: "/") else { return try Sys.syncDirectory(".") }
        try Sys.syncDirectory(slash == path.startIndex ? "/" : String(path[..<slash]))
    }

    /// Checks the user's directory if it exists: false when missing, throws when unsafe.
    func checkUserDirectory(_ user: String) throws(StoreError) -> Bool {
        guard let info = try Sys.lstatInfo(userDirectory(user)) else { return false }
        if let problem = directoryProblem(info) {
            throw .unsafeStateDirectory("\(userDirectory(user)): \(problem)")
        }
        try sweepOnce(user)
        // A record still waiting for its sync goes into place before anything of the user is read.
        for failure in commitPending(user: user) { notice(failure) }
        return true
    }

    /// Removes the `.tmp-*` files a crash left in an account's directory, at the account's first
    /// use since the store opened: before anything in it is read or written. (Sweeping every
    /// account at open listed every account's directory: 2,000 file calls at 1,000 accounts,
    /// docs/performance.md.)
    private func sweepOnce(_ user: String) throws(StoreError) {
        guard sweptUsers.withLock({ !$0.contains(user) }) else { return }
        try removeTemporaryFiles(in: userDirectory(user))
        sweptUsers.withLock { _ = $0.insert(user) }
    }

    func ensureUserDirectory(_ user: String) throws(StoreError) {
        if try checkUserDirectory(user) { return }
        if try Sys.makeDirectory(userDirectory(user)) { try Sys.syncDirectory(usersDirectory) }
    }

    /// Removes `.tmp-*` files left by a crash in the state directory (a handful of names), at open.
    /// They were never renamed into place, so nothing refers to them. Each account's directory is
    /// swept at its first use (`checkUserDirectory`); `users/` itself once the daemon serves
    /// (`removeStaleTemporaryFilesInUsersDirectory`): its listing grows with the accounts.
    func removeStaleTemporaryFiles() throws(StoreError) {
        try removeTemporaryFiles(in: stateDirectory)
    }

    private func removeTemporaryFiles(in directory: String) throws(StoreError) {
        let names = try Sys.listDirectory(directory).filter { $0.hasPrefix(Self.tempPrefix) }
        try removeTemporaryFiles(names, in: directory)
    }

    /// Unlinks `names` (found by a listing) in `directory`, skipping one already gone; then, when
    /// any was removed, syncs the directory and gives a notice. The number removed.
    @discardableResult
    func removeTemporaryFiles(_ names: [String], in directory: String) throws(StoreError) -> Int {
        var removed = 0
        for name in names {
            if Glibc.unlink(directory + "/" + name) == 0 {
                removed += 1
            } else if errno != ENOENT {
                throw .io("unlink \(directory)/\(name)", errno: errno)
            }
        }
        if removed > 0 {
            try Sys.syncDirectory(directory)
            notice("removed temporary files left in \(directory) by an interrupted write")
        }
        return removed
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
                // A newer localauthd's record is not damage: it stays as that version wrote it, and
                // no copy named corrupt is written beside it (the upgrade again reads the original).
                if StateRecord.newerVersion(bytes) == nil { try setAsideCopy(bytes, user: user) }
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
    /// identical copy exists (the daemon loads often; the disk must not fill with copies). Never for
    /// a record a newer version wrote (`StateRecord.newerVersion`): that is kept, not damaged.
    func setAsideCopy(_ bytes: [UInt8], user: String) throws(StoreError) {
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

    func writeRecord(_ state: UserAuthState, user: String, syncDirectory: Bool = true) throws(StoreError) {
        let bytes = try StateRecord.encode(state)
        try ensureUserDirectory(user)
        try atomicWrite(
            bytes, directory: userDirectory(user), name: Self.stateFileName, syncDirectory: syncDirectory,
            retireReplaced: true)
        recordWritten.withLock { $0.body }?(user, state)
    }

    /// The first half of `writeRecord`: the temporary file created and written (space reserved:
    /// a full file system fails here), kept open for `commitPending`. Replaces a record already
    /// pending for the user (never synced: it was only relaxing, the strict side stays).
    func prepareRecord(_ state: UserAuthState, user: String) throws(StoreError) {
        let bytes = try StateRecord.encode(state)
        try ensureUserDirectory(user)
        let directory = userDirectory(user)
        let tempPath = Self.temporaryPath(directory: directory, name: Self.stateFileName)
        closeRetired()
        let fd = try Sys.call("create \(tempPath)") {
            open(tempPath, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        }
        do {
            try Sys.call("fchmod \(tempPath)") { fchmod(fd, 0o600) }
            try Sys.writeAll(fd, bytes, path: tempPath)
            try writeHook?(.tempWritten)
        } catch {
            Sys.close(fd)
            _ = unlink(tempPath)
            throw error
        }
        pendingRecords.withLock {
            $0[user] = PendingRecord(fd: fd, tempPath: tempPath, directory: directory, state: state)
        }
    }

    /// Closes the records renamed over and kept open (`retire`): after the answer, or before the
    /// next file is created, so that a write never needs more free inodes than before.
    func closeRetired() {
        let retired = retiredRecords.withLock { r in
            defer { r.removeAll() }
            return r
        }
        for fd in retired { Sys.close(fd) }
    }

    /// Keeps `fd` (a record just renamed over) open until the next `commitPendingRecords()` or
    /// the next file created; at most 16, the oldest closed first.
    private func retire(_ fd: Int32) {
        let close = retiredRecords.withLock { r -> Int32? in
            r.append(fd)
            return r.count > 16 ? r.removeFirst() : nil
        }
        if let close { Sys.close(close) }
    }

    /// Syncs and renames the pending record of `user` (nil: of every user) into place, as
    /// `atomicWrite` would have (no directory sync: a pending record only relaxes). Returns what
    /// failed, for the log; a failed one is removed and the previous record stays.
    func commitPending(user: String?) -> [String] {
        let records: [(String, PendingRecord)] = pendingRecords.withLock { pending in
            if let user {
                guard let record = pending.removeValue(forKey: user) else { return [] }
                return [(user, record)]
            }
            defer { pending.removeAll() }
            return pending.map { ($0.key, $0.value) }
        }
        var failures: [String] = []
        if user == nil { closeRetired() }
        for (user, record) in records {
            do throws(StoreError) {
                do throws(StoreError) {
                    try Sys.call("fsync \(record.tempPath)") { fsync(record.fd) }
                    try writeHook?(.tempSynced)
                } catch {
                    Sys.close(record.fd)
                    throw error
                }
                Sys.close(record.fd)
                try Sys.rename(record.tempPath, record.directory + "/" + Self.stateFileName)
                try writeHook?(.renamed)
                recordWritten.withLock { $0.body }?(user, record.state)
            } catch {
                _ = unlink(record.tempPath)
                failures.append(
                    "cannot record the state of \(user) after its answer: \(error); the previous record stands")
            }
        }
        return failures
    }

    /// The user's readable prints in enrolment order, with corrupt ones set aside: the domain
    /// state is redrawn first (record before files, as in `addPrint`), then each is renamed.
    func scanPrints(user: String) throws(StoreError) -> [PrintRecord.Decoded] {
        guard try checkUserDirectory(user) else { return [] }
        let directory = userDirectory(user)
        var good: [(decoded: PrintRecord.Decoded, name: String)] = []
        var corrupt: [(name: String, reason: String)] = []
        for name in try Sys.listDirectory(directory) {
            guard let (finger, deviceKey) = PrintRecord.parseFileName(name) else { continue }
            let read = readRecord(user: user, name: name, limit: Self.maximumPrintFileSize, sealed: true) {
                PrintRecord.decode($0, expectedFinger: finger, expectedDeviceKey: deviceKey)
            }
            switch read {
            case .absent: continue
            case .ok(let decoded): good.append((decoded, name))
            case .corrupt(let reason): corrupt.append((name, reason))
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
    func removeFiles(_ names: [String], user: String) throws(StoreError) -> UserAuthState {
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

    /// `directory/.tmp-<name>-<16 hex digits>`: a name no one else picks (`O_EXCL` checks).
    static func temporaryPath(directory: String, name: String) -> String {
        var random = SystemRandomNumberGenerator()
        return "\(directory)/\(Self.tempPrefix)\(name)-\(Hex.encode(withUnsafeBytes(of: random.next()) { Array($0) }))"
    }

    /// Replaces `directory/name` with `bytes` so that after a crash at any point the file holds
    /// the old bytes or the new, never a mix: write a temporary file in the same directory, fsync
    /// it, rename it over the target, fsync the directory. A failed write removes its temporary
    /// file; a simulated crash (the hook throwing) leaves it, for `init` to clean.
    ///
    /// Without `syncDirectory` the rename is not made durable: after a `kill -9` the new file is
    /// there (the page cache outlives the process), after power loss the old or the new one, each
    /// whole (both were fsynced before their rename). Only for a write whose loss is harmless.
    ///
    /// `retireReplaced`: the file renamed over stays open (`retiredRecords`) until
    /// `commitPendingRecords()` or the next file created, so that freeing its blocks (with a file
    /// system mounted `discard`, a trim sent to the disk and waited for) happens then, not inside
    /// the rename.
    func atomicWrite(
        _ bytes: [UInt8], directory: String, name: String, syncDirectory: Bool = true, retireReplaced: Bool = false
    ) throws(StoreError) {
        let tempPath = Self.temporaryPath(directory: directory, name: name)
        let targetPath = directory + "/" + name
        // A file system that is full but for one inode still takes every write of a request.
        closeRetired()
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
        do throws(StoreError) {
            // The umask may have taken bits off 0600; set it exactly.
            try Sys.call("fchmod \(tempPath)") { fchmod(fd, 0o600) }
            try Sys.writeAll(fd, bytes, path: tempPath)
            try step(.tempWritten)
            try Sys.call("fsync \(tempPath)") { fsync(fd) }
            try step(.tempSynced)
            Sys.close(fd)
            isOpen = false
            let replaced = retireReplaced ? open(targetPath, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1
            do throws(StoreError) {
                try Sys.rename(tempPath, targetPath)
            } catch {
                if replaced >= 0 { Sys.close(replaced) }
                throw error
            }
            if replaced >= 0 { retire(replaced) }
        } catch {
            if isOpen { Sys.close(fd) }
            if !crashed { _ = unlink(tempPath) }
            throw error
        }
        try writeHook?(.renamed)
        guard syncDirectory else { return }
        try Sys.syncDirectory(directory)
        try writeHook?(.directorySynced)
    }
}
