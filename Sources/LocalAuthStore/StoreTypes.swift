import LocalAuthCore

// SPDX-License-Identifier: Apache-2.0
import enum LocalAuthProtocol.FingerName

/// Why a store operation failed. Messages carry paths and user names, never passcodes or print bytes.
public enum StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The user name is not `[A-Za-z0-9._-]{1,64}` or starts with `-` or `.`.
    case invalidUserName(String)
    /// A device key, finger name, print size or record field the store refuses to write.
    case invalidArgument(String)
    /// The state directory (or a directory inside it) is group/world writable, not ours, or not a directory.
    case unsafeStateDirectory(String)
    /// A system call failed: what was being done, and `errno`.
    case io(String, errno: Int32)
    /// The user's record is corrupt; the store refuses to change it until `resetState(user:)`.
    case corruptState(String)
    /// The user's record was written by a newer version of localauthd (its path and record version):
    /// this version neither reads it nor writes over it, `resetState(user:)` included.
    case newerState(String, version: Int)
    /// Another process holds the state directory's lock (another daemon on the same directory).
    case inUse(String)
    /// No such print.
    case notFound
    /// That finger on that device is already enrolled; a right with that identifier exists.
    case alreadyExists
    /// The user has as many rights as one account may have (`StoredRight.maximumCount`).
    case limitReached
    /// The state directory is sealed with a key this machine does not have (moved from another
    /// machine, the key file or the TPM2 gone), or the key cannot be made. Nothing was changed.
    case sealing(String)

    public var description: String {
        switch self {
        case .invalidUserName(let name): return "invalid user name \(Validation.quoted(name))"
        case .invalidArgument(let why): return "invalid argument: \(why)"
        case .unsafeStateDirectory(let why): return "unsafe state directory: \(why)"
        case .io(let what, let code): return "\(what): \(Sys.describe(errno: code))"
        case .corruptState(let why): return "corrupt user record: \(why)"
        case .newerState(let path, let version):
            return "\(path) was written by a newer version of localauthd (record version \(version); this one reads "
                + "\(StateRecord.version1)) and is kept: run that version again, or remove the file to discard it "
                + "(its passcode, counters and lockouts are then lost)"
        case .inUse(let why): return why
        case .notFound: return "not found"
        case .alreadyExists: return "already exists"
        case .limitReached: return "limit reached"
        case .sealing(let why): return "cannot unseal the state directory: \(why)"
        }
    }
}

/// The outcome of reading one of a user's records, of every kind: a damaged record is never
/// mistaken for a missing one.
public enum RecordLoad<Value> {
    /// No record (for the user record: no record and no prints, a new user).
    case absent
    /// The record, checked.
    case ok(Value)
    /// Unreadable, truncated, garbage, a bad checksum, a foreign owner or a loose mode, sealed
    /// elsewhere: the path and why.
    case corrupt(String)
}

extension RecordLoad: Equatable where Value: Equatable {}
extension RecordLoad: Sendable where Value: Sendable {}

/// The user's record (`loadState`). `.corrupt`: the daemon must refuse biometrics (and
/// passcodes) for this user until an administrator runs `resetState(user:)`.
public typealias StateLoad = RecordLoad<UserAuthState>

/// One enrolled finger: libfprint's own serialisation of the print, for one reader.
public struct StoredPrint: Equatable, Sendable {
    /// Which finger (fprintd's names on disk).
    public let finger: FingerName
    /// The reader's storage key, e.g. `virtual_device-0`; a print is only ever offered to this reader.
    public let deviceKey: String
    /// `fp_print_serialize` output; opaque to the store.
    public let data: [UInt8]
    /// When it was enrolled, milliseconds since the Unix epoch (the daemon's clock).
    public let enrolledAtMs: Int64

    public init(finger: FingerName, deviceKey: String, data: [UInt8], enrolledAtMs: Int64) {
        self.finger = finger
        self.deviceKey = deviceKey
        self.data = data
        self.enrolledAtMs = enrolledAtMs
    }

    /// The largest print the store accepts; real sensors' prints are up to ~100 KB.
    public static let maximumDataSize = 1 << 20
}

/// A user's record written to its temporary file and not yet synced or renamed into place
/// (`EnrollmentStore.saveState(_:user:syncLaterIfRelaxing:)`).
struct PendingRecord: Sendable {
    let fd: Int32
    let tempPath: String
    let directory: String
    let state: UserAuthState
}

/// The points inside a durable write where a test may simulate a crash (see `EnrollmentStore`'s
/// internal `writeHook`). A hook that throws stops the write there, leaving files as a crash would.
enum WriteStep: Equatable, Sendable {
    /// The temporary file holds the new bytes (not yet fsynced).
    case tempWritten
    /// The temporary file is fsynced.
    case tempSynced
    /// The temporary file has been renamed over the target (directory not yet fsynced).
    case renamed
    /// A file has been unlinked (directory not yet fsynced).
    case removed
    /// The directory is fsynced: the change is durable.
    case directorySynced
}

/// Name checks shared by user names and device keys: both become file names.
enum Validation {
    /// `[A-Za-z0-9._-]`, 1…64 bytes, not starting with `-` (option-like) or `.` (hidden, `.`/`..`, temp files).
    static func isSafeName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...64).contains(bytes.count), bytes[0] != UInt8(ascii: "-"), bytes[0] != UInt8(ascii: ".") else {
            return false
        }
        return isAlphanumeric(bytes, or: "._-")
    }

    /// Every byte is an ASCII letter, an ASCII digit or one of `others`.
    static func isAlphanumeric(_ bytes: some Sequence<UInt8>, or others: String) -> Bool {
        let extra = Array(others.utf8)
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            default: extra.contains(byte)
            }
        }
    }

    static func user(_ name: String) throws(StoreError) {
        guard isSafeName(name) else { throw .invalidUserName(name) }
    }

    static func deviceKey(_ key: String) throws(StoreError) {
        guard isSafeName(key) else { throw .invalidArgument("device key \(quoted(key)) is not a safe file name") }
    }

    /// A name for a message: printable ASCII only, bounded, so a hostile name cannot forge log lines.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars.prefix(80) {
            if scalar.isASCII, scalar.value >= 0x20, scalar.value < 0x7f, scalar != "\"", scalar != "\\" {
                out.unicodeScalars.append(scalar)
            } else {
                out += "\\u{\(String(scalar.value, radix: 16))}"
            }
        }
        if text.unicodeScalars.count > 80 { out += "…" }
        return out + "\""
    }
}
