// SPDX-License-Identifier: Apache-2.0
import Glibc
import LocalAuthCrypto

/// One right of one user and one program: an app's secret and P-256 private key, released or used
/// only after the requirement is met (`docs/policy.md`, rights), and only to the program that saved
/// it (`owner`, `docs/adr/0012-right-ownership.md`).
public struct StoredRight: Equatable, Sendable {
    /// Apple's `LAAuthenticationRequirement`s that Linux can meet.
    public enum Requirement: String, Sendable, CaseIterable {
        /// `.biometry`: any enrolled finger.
        case biometryAny = "biometry-any"
        /// `.biometryCurrentSet`: a finger of the set enrolled when the right was saved; the right
        /// is destroyed when the set changes.
        case biometryCurrentSet = "biometry-current-set"
        /// `.biometry(fallback: .devicePasscode)` and `.default`: a finger, or the passcode.
        case biometryOrPasscode = "biometry-or-passcode"
        /// The passcode alone.
        case passcode
    }

    public let identifier: String
    /// The program that saved it, as the daemon names programs (`ProgramIdentity.stored`:
    /// "exe:/usr/bin/…", "flatpak:…", "snap:…"); nil for a right saved before rights had owners
    /// (record version 1), which the first program that uses it with the person's consent adopts.
    public let owner: String?
    public let requirement: Requirement
    /// For `biometryCurrentSet`: the domain state of the set it is bound to; empty otherwise.
    public let domainState: [UInt8]
    public let secret: [UInt8]
    /// 32 raw bytes; never leaves the daemon.
    public let privateKey: [UInt8]
    public let createdAtMs: Int64

    public static let maximumIdentifierSize = 256
    public static let maximumSecretSize = 1024
    /// The most rights one account keeps: with the sizes above a right is one file block (1779
    /// bytes at the largest, measured), so a user's rights take about 64 × 4 KiB on disk, and no
    /// process of theirs can fill the state directory's file system.
    public static let maximumCount = 64

    public init(
        identifier: String, owner: String?, requirement: Requirement, domainState: [UInt8], secret: [UInt8],
        privateKey: [UInt8], createdAtMs: Int64
    ) {
        self.identifier = identifier
        self.owner = owner
        self.requirement = requirement
        self.domainState = domainState
        self.secret = secret
        self.privateKey = privateKey
        self.createdAtMs = createdAtMs
    }

    /// 1…256 UTF-8 bytes, no NUL and no line break (it goes into a record line, hex-encoded anyway).
    public static func isValidIdentifier(_ identifier: String) -> Bool {
        let bytes = Array(identifier.utf8)
        return (1...maximumIdentifierSize).contains(bytes.count) && !bytes.contains(0)
    }

    /// An owner's name: 1…4096 UTF-8 bytes without NUL (a path at most `PATH_MAX` long, and a prefix).
    public static func isValidOwner(_ owner: String) -> Bool {
        let bytes = Array(owner.utf8)
        return (1...4096 + 16).contains(bytes.count) && !bytes.contains(0)
    }

    /// The same right, belonging to `owner`.
    func owned(by owner: String) -> StoredRight {
        StoredRight(
            identifier: identifier, owner: owner, requirement: requirement, domainState: domainState, secret: secret,
            privateKey: privateKey, createdAtMs: createdAtMs)
    }
}

/// A right (`loadRight`): a damaged one is never mistaken for a missing one.
public typealias RightLoad = RecordLoad<StoredRight>

/// A right's file, `users/<user>/<sha256(owner NUL identifier) hex>.right`, before sealing (the
/// seal binds the user and the file name, so the record cannot be moved to another owner's name):
///
///     localauthd-right 2
///     owner=<hex of the UTF-8>
///     identifier=<hex of the UTF-8>
///     requirement=biometry-current-set
///     domainState=<hex, or empty>
///     createdAtMs=1760000000000
///     privateKey=<64 hex>
///     secretLength=<n>
///     <n raw bytes>\n
///     crc32=…
///
/// Version 1 (before rights had owners) has no `owner` line and lives at `<sha256(identifier)
/// hex>.right`: a right of no program yet, which the first program to use it adopts (ADR 0012).
enum RightRecord {
    static let header = "localauthd-right 2"
    static let headerVersion1 = "localauthd-right 1"
    static let fileSuffix = ".right"

    /// The file of `owner`'s right `identifier`; with `owner` nil, where version 1 kept it.
    static func fileName(owner: String?, identifier: String) -> String {
        guard let owner else { return Hex.encode(Digests.sha256(Array(identifier.utf8))) + fileSuffix }
        return Hex.encode(Digests.sha256(Array(owner.utf8) + [0] + Array(identifier.utf8))) + fileSuffix
    }

    static func encode(_ right: StoredRight) -> [UInt8] {
        precondition(right.owner != nil, "a right is written with its owner")
        let ownerLine = "owner=\(Hex.encode(Array((right.owner ?? "").utf8)))\n"
        return Seal.seal(body(right, header: header + "\n" + ownerLine))
    }

    /// The record before sealing: `header` (its lines, each ended), the right's fields, its secret.
    /// Version 1 differs only in its header and the owner line it lacks.
    static func body(_ right: StoredRight, header: String) -> [UInt8] {
        var body = Array(
            """
            \(header)identifier=\(Hex.encode(Array(right.identifier.utf8)))
            requirement=\(right.requirement.rawValue)
            domainState=\(Hex.encode(right.domainState))
            createdAtMs=\(right.createdAtMs)
            privateKey=\(Hex.encode(right.privateKey))
            secretLength=\(right.secret.count)

            """.utf8)
        body += right.secret
        body.append(UInt8(ascii: "\n"))
        return body
    }

    static func decode(_ bytes: [UInt8], expectedName: String) -> Result<StoredRight, FormatError> {
        let body: ArraySlice<UInt8>
        switch Seal.open(bytes) {
        case .success(let b): body = b
        case .failure(let e): return .failure(e)
        }
        var cursor = ByteCursor(body)
        let owner: String?
        switch cursor.line() {
        case Substring(header):
            guard let ownerHex = cursor.field("owner"), let ownerBytes = Hex.decode(ownerHex),
                let text = String(validating: ownerBytes, as: UTF8.self), StoredRight.isValidOwner(text)
            else { return .failure(FormatError("malformed right record: its owner")) }
            owner = text
        case Substring(headerVersion1): owner = nil
        default: return .failure(FormatError("not a right record"))
        }
        guard let identifierHex = cursor.field("identifier"), let identifierBytes = Hex.decode(identifierHex),
            let identifier = String(validating: identifierBytes, as: UTF8.self),
            StoredRight.isValidIdentifier(identifier),
            let requirementText = cursor.field("requirement"),
            let requirement = StoredRight.Requirement(rawValue: String(requirementText)),
            let domainHex = cursor.field("domainState"), let domainState = Hex.decode(domainHex),
            let createdText = cursor.field("createdAtMs"), let createdAtMs = Int64(createdText),
            let keyHex = cursor.field("privateKey"), let privateKey = Hex.decode(keyHex), privateKey.count == 32,
            let lengthText = cursor.field("secretLength"), let length = Int(lengthText),
            (0...StoredRight.maximumSecretSize).contains(length),
            let secret = cursor.take(length), cursor.take(1) == [UInt8(ascii: "\n")], cursor.isAtEnd
        else { return .failure(FormatError("malformed right record")) }
        guard fileName(owner: owner, identifier: identifier) == expectedName else {
            return .failure(FormatError("the record's owner and identifier do not match its file name"))
        }
        return .success(
            StoredRight(
                identifier: identifier, owner: owner, requirement: requirement, domainState: domainState,
                secret: Array(secret), privateKey: privateKey, createdAtMs: createdAtMs))
    }
}

extension EnrollmentStore {
    /// Saves a new right of `right.owner`; `alreadyExists` when that program has one with that
    /// identifier, or a right saved before rights had owners holds it (a right is never replaced by a
    /// save: it must be removed first); `limitReached` when the user has `StoredRight.maximumCount`
    /// rights (of every program; damaged ones count: they take room too).
    public func saveRight(_ right: StoredRight, user: String) throws(StoreError) {
        try Validation.user(user)
        guard let owner = right.owner, StoredRight.isValidOwner(owner) else {
            throw .invalidArgument("a right is saved with the program that owns it")
        }
        guard StoredRight.isValidIdentifier(right.identifier) else {
            throw .invalidArgument("a right's identifier must be 1 to \(StoredRight.maximumIdentifierSize) bytes")
        }
        guard right.secret.count <= StoredRight.maximumSecretSize, right.privateKey.count == 32 else {
            throw .invalidArgument("a right's secret is at most \(StoredRight.maximumSecretSize) bytes")
        }
        try lock.withLock { _ throws(StoreError) in
            let name = RightRecord.fileName(owner: owner, identifier: right.identifier)
            try ensureUserDirectory(user)
            for taken in [name, RightRecord.fileName(owner: nil, identifier: right.identifier)] {
                guard try Sys.lstatInfo(userDirectory(user) + "/" + taken) == nil else { throw .alreadyExists }
            }
            let held = try Sys.listDirectory(userDirectory(user)).filter { $0.hasSuffix(RightRecord.fileSuffix) }.count
            guard held < StoredRight.maximumCount else { throw .limitReached }
            try atomicWrite(
                sealedIfSealing(RightRecord.encode(right), user: user, name: name), directory: userDirectory(user),
                name: name)
        }
    }

    /// `owner`'s right with that identifier; else a right of that identifier saved before rights had
    /// owners (`owner` nil in what is returned), which any program may see until one adopts it
    /// (`adoptRight`). Another program's right of that identifier reads as absent, as on Apple's
    /// systems. A `biometryCurrentSet` right whose set has changed (a crash after an enrolment,
    /// before its destruction) is destroyed here and reads as absent.
    public func loadRight(identifier: String, owner: String, user: String) throws(StoreError) -> RightLoad {
        let valid = StoredRight.isValidIdentifier(identifier) && StoredRight.isValidOwner(owner)
        return try withUserDirectory(user, valid: valid, else: { () throws(StoreError) in .absent }) {
            () throws(StoreError) in
            var name = RightRecord.fileName(owner: owner, identifier: identifier)
            var loaded = readRight(user: user, name: name)
            if loaded == .absent {
                name = RightRecord.fileName(owner: nil, identifier: identifier)
                loaded = try readUnownedRight(user: user, name: name)
            }
            if case .ok(let right) = loaded, right.requirement == .biometryCurrentSet {
                let current: [UInt8]
                switch try load(user: user) {
                case .ok(let state): current = state.domainState
                case .absent: current = []
                case .corrupt(let why): return .corrupt("the user's record is corrupt: \(why)")
                }
                if current != right.domainState {
                    try removeRightFile(user: user, name: name)
                    notice(
                        "user \(Validation.quoted(user)): destroyed a right bound to an enrolled set that has changed")
                    return .absent
                }
            }
            return loaded
        }
    }

    /// Gives a right saved before rights had owners to `owner`: written under `owner`'s name first,
    /// then the unowned file removed (a crash between leaves a copy that `loadRight` recognises by its
    /// key and removes). Returns the adopted right; `notFound` when there is no unowned right of that
    /// identifier (any more), `alreadyExists` when `owner` has one of its own.
    public func adoptRight(identifier: String, owner: String, user: String) throws(StoreError) -> StoredRight {
        let valid = StoredRight.isValidIdentifier(identifier) && StoredRight.isValidOwner(owner)
        return try withUserDirectory(user, valid: valid, else: { () throws(StoreError) in throw .notFound }) {
            () throws(StoreError) in
            let unowned = RightRecord.fileName(owner: nil, identifier: identifier)
            guard case .ok(let right) = try readUnownedRight(user: user, name: unowned) else { throw .notFound }
            let name = RightRecord.fileName(owner: owner, identifier: identifier)
            guard try Sys.lstatInfo(userDirectory(user) + "/" + name) == nil else { throw .alreadyExists }
            let adopted = right.owned(by: owner)
            try atomicWrite(
                sealedIfSealing(RightRecord.encode(adopted), user: user, name: name), directory: userDirectory(user),
                name: name)
            try removeRightFile(user: user, name: unowned)
            notice(
                "user \(Validation.quoted(user)): the right \(Validation.quoted(identifier)), saved before rights had owners, now belongs to \(Validation.quoted(owner))"
            )
            return adopted
        }
    }

    /// Removes `owner`'s right of that identifier, else the unowned one (saved before rights had
    /// owners); with `owner` nil (an administrator), every program's right of that identifier.
    /// `notFound` when there is none.
    public func removeRight(identifier: String, owner: String?, user: String) throws(StoreError) {
        let valid = StoredRight.isValidIdentifier(identifier)
        try withUserDirectory(user, valid: valid, else: { () throws(StoreError) in throw .notFound }) {
            () throws(StoreError) in
            let names: [String]
            if let owner {
                guard StoredRight.isValidOwner(owner) else { throw .notFound }
                let own = RightRecord.fileName(owner: owner, identifier: identifier)
                let unowned = RightRecord.fileName(owner: nil, identifier: identifier)
                if try Sys.lstatInfo(userDirectory(user) + "/" + own) != nil {
                    names = [own]
                } else if try Sys.lstatInfo(userDirectory(user) + "/" + unowned) != nil {
                    names = [unowned]
                } else {
                    names = []
                }
            } else {
                names = try Sys.listDirectory(userDirectory(user)).filter { name in
                    guard name.hasSuffix(RightRecord.fileSuffix),
                        case .ok(let right) = readRight(user: user, name: name)
                    else { return false }
                    return right.identifier == identifier
                }
            }
            guard !names.isEmpty else { throw .notFound }
            for name in names { try removeRightFile(user: user, name: name) }
        }
    }

    /// Removes every right of `owner` (Apple's `removeAllRights`: this client's); with `owner` nil (an
    /// administrator), every right of the user, damaged ones too. Returns how many there were.
    @discardableResult
    public func removeAllRights(user: String, owner: String?) throws(StoreError) -> Int {
        try withUserDirectory(user, else: { () throws(StoreError) in 0 }) { () throws(StoreError) in
            let names = try Sys.listDirectory(userDirectory(user)).filter { name in
                guard name.hasSuffix(RightRecord.fileSuffix) else { return false }
                guard let owner else { return true }
                guard case .ok(let right) = readRight(user: user, name: name) else { return false }
                return right.owner == owner
            }
            for name in names { try removeRightFile(user: user, name: name) }
            return names.count
        }
    }

    /// How many rights the user has (of every program, readable or not).
    public func rightCount(user: String) throws(StoreError) -> Int {
        try withUserDirectory(user, else: { () throws(StoreError) in 0 }) { () throws(StoreError) in
            try Sys.listDirectory(userDirectory(user)).filter { $0.hasSuffix(RightRecord.fileSuffix) }.count
        }
    }

    /// `body` with the lock held, for a valid `user` whose directory exists; else `missing`'s answer,
    /// which is also the answer for arguments that are not `valid` (checked before the lock).
    private func withUserDirectory<Result>(
        _ user: String, valid: Bool = true, else missing: () throws(StoreError) -> Result,
        _ body: () throws(StoreError) -> Result
    ) throws(StoreError) -> Result {
        try Validation.user(user)
        guard valid else { return try missing() }
        return try lock.withLock { _ throws(StoreError) in
            guard try checkUserDirectory(user) else { return try missing() }
            return try body()
        }
    }

    // MARK: - Internals (called with the lock held)

    func readRight(user: String, name: String) -> RightLoad {
        loadRecord(user: user, name: name, limit: 16 * 1024, sealed: true) {
            RightRecord.decode($0, expectedName: name)
        }
    }

    /// The unowned right at `name` (version 1's place), unless it is the copy an adoption interrupted
    /// by a crash left behind (an owned right with the same key exists): that is removed, and absent.
    private func readUnownedRight(user: String, name: String) throws(StoreError) -> RightLoad {
        let loaded = readRight(user: user, name: name)
        guard case .ok(let right) = loaded else { return loaded }
        for other in try Sys.listDirectory(userDirectory(user))
        where other.hasSuffix(RightRecord.fileSuffix) && other != name {
            if case .ok(let owned) = readRight(user: user, name: other), owned.owner != nil,
                owned.identifier == right.identifier, owned.privateKey == right.privateKey
            {
                try removeRightFile(user: user, name: name)
                notice("user \(Validation.quoted(user)): removed the unowned copy of an adopted right")
                return .absent
            }
        }
        return loaded
    }

    private func removeRightFile(user: String, name: String) throws(StoreError) {
        try Sys.unlink(userDirectory(user) + "/" + name)
        try writeHook?(.removed)
        try Sys.syncDirectory(userDirectory(user))
        try writeHook?(.directorySynced)
    }

    /// Destroys the user's `biometryCurrentSet` rights bound to another set than `domainState`:
    /// called after every change of the enrolled set, once the new domain state is durable. A
    /// damaged right file is left for `loadRight` to report.
    func destroyRightsBoundToOtherSets(user: String, domainState: [UInt8]) throws(StoreError) {
        guard try checkUserDirectory(user) else { return }
        var destroyed = 0
        for name in try Sys.listDirectory(userDirectory(user)) where name.hasSuffix(RightRecord.fileSuffix) {
            if case .ok(let right) = readRight(user: user, name: name), right.requirement == .biometryCurrentSet,
                right.domainState != domainState
            {
                try removeRightFile(user: user, name: name)
                destroyed += 1
            }
        }
        if destroyed > 0 {
            notice(
                "user \(Validation.quoted(user)): destroyed \(destroyed) right(s) bound to the previous set of fingers")
        }
    }
}
