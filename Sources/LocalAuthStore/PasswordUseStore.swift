// SPDX-License-Identifier: Apache-2.0
import Glibc
import LocalAuthCore

/// The user's record of password and finger use (`loadPasswordUse`). `.absent`: nothing was ever
/// proven (the rules then ask for the password); `.corrupt`: the rules ask for the password
/// (`useUnknown`) until the next password use writes a fresh record.
public typealias PasswordUseLoad = RecordLoad<PasswordUse>

/// The "password required" side of the store (`docs/adr/0007-password-required.md`): per user,
/// `users/<user>/password`, when the password (or passcode) and a finger last proved the user; for
/// the machine, `password-reported`, which exists once any PAM stack has reported a password.
///
/// A separate file from the lockout record on purpose: a write here can only ever relax the rules
/// by a recorded use, so every crash leaves the old record (stricter) or the new one, and a damaged
/// file reads as "password required", never as "not required".
extension EnrollmentStore {
    static let passwordUseFileName = "password"
    static let passwordReportedFileName = "password-reported"

    /// The user's record of use.
    public func loadPasswordUse(user: String) throws(StoreError) -> PasswordUseLoad {
        try Validation.user(user)
        return try lock.withLock { _ throws(StoreError) in
            guard try checkUserDirectory(user) else { return .absent }
            return loadRecord(
                user: user, name: Self.passwordUseFileName, limit: Self.maximumRecordSize, sealed: false,
                decode: PasswordUseRecord.decode)
        }
    }

    /// Writes the user's record of use durably (replacing a damaged one: what is written is a use
    /// that was just proven, so nothing is lost that could have made the rules stricter).
    public func savePasswordUse(_ use: PasswordUse, user: String) throws(StoreError) {
        try Validation.user(user)
        let bytes = try PasswordUseRecord.encode(use)
        try lock.withLock { _ throws(StoreError) in
            try ensureUserDirectory(user)
            try atomicWrite(bytes, directory: userDirectory(user), name: Self.passwordUseFileName)
        }
    }

    /// True once a PAM stack has reported a password on this machine. A marker that exists but is
    /// damaged or foreign counts as present: the rules stay on (the strict side).
    public func passwordReported() throws(StoreError) -> Bool {
        try lock.withLock { _ throws(StoreError) in
            guard try Sys.lstatInfo(stateDirectory + "/" + Self.passwordReportedFileName) != nil else { return false }
            return true
        }
    }

    /// Creates the marker (once; durable) at the first accepted report. Returns true when it was new.
    @discardableResult
    public func markPasswordReported(atMs: Int64) throws(StoreError) -> Bool {
        try lock.withLock { _ throws(StoreError) in
            guard try Sys.lstatInfo(stateDirectory + "/" + Self.passwordReportedFileName) == nil else { return false }
            let text = "localauthd-password-reported 1\nsinceMs=\(atMs)\n"
            try atomicWrite(Seal.seal(Array(text.utf8)), directory: stateDirectory, name: Self.passwordReportedFileName)
            return true
        }
    }
}

/// The record of use: a version line, two fields, the seal.
///
///     localauthd-password-use 1
///     password=<boot id> <boot-clock ms> <wall ms>   (empty: never)
///     finger=<boot id> <boot-clock ms> <wall ms>     (empty: never)
///     crc32=1a2b3c4d
///
/// Strict like the user record: fixed order, canonical numbers, a boot id of 32 lowercase hex digits.
enum PasswordUseRecord {
    static let header = "localauthd-password-use 1"

    static func encode(_ use: PasswordUse) throws(StoreError) -> [UInt8] {
        var text = header + "\n"
        for (key, instant) in [("password", use.password), ("finger", use.finger)] {
            var value = ""
            if let instant {
                guard isBootID(instant.bootID) else {
                    throw .invalidArgument("boot id \(Validation.quoted(instant.bootID)) is not 32 hex digits")
                }
                value = "\(instant.bootID) \(instant.bootMs) \(instant.wallMs)"
            }
            text += "\(key)=\(value)\n"
        }
        return Seal.seal(Array(text.utf8))
    }

    static func decode(_ bytes: [UInt8]) -> Result<PasswordUse, FormatError> {
        var cursor: ByteCursor
        switch Seal.openRecord(bytes, header: header) {
        case .success(let c): cursor = c
        case .failure(let error): return .failure(error)
        }
        var instants: [BootInstant?] = []
        for key in ["password", "finger"] {
            guard let value = cursor.field(key) else { return .failure(FormatError("expected the field \(key)")) }
            if value.isEmpty {
                instants.append(nil)
                continue
            }
            let words = value.split(separator: " ", omittingEmptySubsequences: false)
            guard words.count == 3, isBootID(String(words[0])),
                let bootMs = StateRecord.canonicalInt(words[1]), let wallMs = StateRecord.canonicalInt(words[2])
            else { return .failure(FormatError("bad \(key) time")) }
            instants.append(BootInstant(bootID: String(words[0]), bootMs: Int64(bootMs), wallMs: Int64(wallMs)))
        }
        guard cursor.isAtEnd else { return .failure(FormatError("unexpected lines after the fields")) }
        return .success(PasswordUse(password: instants[0], finger: instants[1]))
    }

    static func isBootID(_ text: String) -> Bool {
        text.utf8.count == 32 && Hex.decode(Substring(text)) != nil
    }
}
