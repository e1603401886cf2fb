// SPDX-License-Identifier: Apache-2.0
import Glibc
import LocalAuthCrypto

/// One right of one user: an app's secret and P-256 private key, released or used only after the
/// requirement is met (`docs/policy.md`, rights).
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
        identifier: String, requirement: Requirement, domainState: [UInt8], secret: [UInt8], privateKey: [UInt8],
        createdAtMs: Int64
    ) {
        self.identifier = identifier
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
}

/// A right (`loadRight`): a damaged one is never mistaken for a missing one.
public typealias RightLoad = RecordLoad<StoredRight>

/// A right's file, `users/<user>/<sha256(identifier) hex>.right`, before sealing:
///
///     localauthd-right 1
///     identifier=<hex of the UTF-8>
///     requirement=biometry-current-set
///     domainState=<hex, or empty>
///     createdAtMs=1760000000000
///     privateKey=<64 hex>
///     secretLength=<n>
///     <n raw bytes>\n
///     crc32=…
enum RightRecord {
    static let header = "localauthd-right 1"
    static let fileSuffix = ".right"

    static func fileName(identifier: String) -> String {
        Hex.encode(Digests.sha256(Array(identifier.utf8))) + fileSuffix
    }

    static func encode(_ right: StoredRight) -> [UInt8] {
        var body = Array(
            """
            \(header)
            identifier=\(Hex.encode(Array(right.identifier.utf8)))
            requirement=\(right.requirement.rawValue)
            domainState=\(Hex.encode(right.domainState))
            createdAtMs=\(right.createdAtMs)
            privateKey=\(Hex.encode(right.privateKey))
            secretLength=\(right.secret.count)

            """.utf8)
        body += right.secret
        body.append(UInt8(ascii: "\n"))
        return Seal.seal(body)
    }

    static func decode(_ bytes: [UInt8], expectedName: String) -> Result<StoredRight, FormatError> {
        let body: ArraySlice<UInt8>
        switch Seal.open(bytes) {
        case .success(let b): body = b
        case .failure(let e): return .failure(e)
        }
        var cursor = ByteCursor(body)
        guard cursor.line() == Substring(header) else { return .failure(FormatError("not a right record")) }
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
        guard fileName(identifier: identifier) == expectedName else {
            return .failure(FormatError("the record's identifier does not match its file name"))
        }
        return .success(
            StoredRight(
                identifier: identifier, requirement: requirement, domainState: domainState, secret: Array(secret),
                privateKey: privateKey, createdAtMs: createdAtMs))
    }
}

extension EnrollmentStore {
    /// Saves a new right; `alreadyExists` when the user has one with that identifier (a right is
    /// never replaced by a save: it must be removed first), `limitReached` when the user has
    /// `StoredRight.maximumCount` rights (damaged ones count: they take room too).
    public func saveRight(_ right: StoredRight, user: String) throws(StoreError) {
        try Validation.user(user)
        guard StoredRight.isValidIdentifier(right.identifier) else {
            throw .invalidArgument("a right's identifier must be 1 to \(StoredRight.maximumIdentifierSize) bytes")
        }
        guard right.secret.count <= StoredRight.maximumSecretSize, right.privateKey.count == 32 else {
            throw .invalidArgument("a right's secret is at most \(StoredRight.maximumSecretSize) bytes")
        }
        try lock.withLock { _ throws(StoreError) in
            let name = RightRecord.fileName(identifier: right.identifier)
            try ensureUserDirectory(user)
            guard try Sys.lstatInfo(userDirectory(user) + "/" + name) == nil else { throw .alreadyExists }
            let held = try Sys.listDirectory(userDirectory(user)).filter { $0.hasSuffix(RightRecord.fileSuffix) }.count
            guard held < StoredRight.maximumCount else { throw .limitReached }
            try atomicWrite(
                sealedIfSealing(RightRecord.encode(right), user: user, name: name), directory: userDirectory(user),
                name: name)
        }
    }

    /// The user's right with that identifier. A `biometryCurrentSet` right whose set has changed
    /// (a crash after an enrolment, before its destruction) is destroyed here and reads as absent.
    public func loadRight(identifier: String, user: String) throws(StoreError) -> RightLoad {
        try Validation.user(user)
        guard StoredRight.isValidIdentifier(identifier) else { return .absent }
        return try lock.withLock { _ throws(StoreError) in
            guard try checkUserDirectory(user) else { return .absent }
            let name = RightRecord.fileName(identifier: identifier)
            let loaded = readRight(user: user, name: name)
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

    /// Removes one right; `notFound` when there is none.
    public func removeRight(identifier: String, user: String) throws(StoreError) {
        try Validation.user(user)
        guard StoredRight.isValidIdentifier(identifier) else { throw .notFound }
        try lock.withLock { _ throws(StoreError) in
            guard try checkUserDirectory(user) else { throw .notFound }
            let name = RightRecord.fileName(identifier: identifier)
            guard try Sys.lstatInfo(userDirectory(user) + "/" + name) != nil else { throw .notFound }
            try removeRightFile(user: user, name: name)
        }
    }

    /// Removes every right of the user; returns how many there were.
    @discardableResult
    public func removeAllRights(user: String) throws(StoreError) -> Int {
        try Validation.user(user)
        return try lock.withLock { _ throws(StoreError) in
            guard try checkUserDirectory(user) else { return 0 }
            let names = try Sys.listDirectory(userDirectory(user)).filter { $0.hasSuffix(RightRecord.fileSuffix) }
            for name in names { try removeRightFile(user: user, name: name) }
            return names.count
        }
    }

    /// How many rights the user has (readable or not).
    public func rightCount(user: String) throws(StoreError) -> Int {
        try Validation.user(user)
        return try lock.withLock { _ throws(StoreError) in
            guard try checkUserDirectory(user) else { return 0 }
            return try Sys.listDirectory(userDirectory(user)).filter { $0.hasSuffix(RightRecord.fileSuffix) }.count
        }
    }

    // MARK: - Internals (called with the lock held)

    func readRight(user: String, name: String) -> RightLoad {
        loadRecord(user: user, name: name, limit: 16 * 1024, sealed: true) {
            RightRecord.decode($0, expectedName: name)
        }
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
