// SPDX-License-Identifier: Apache-2.0

/// Limits and constants of the wire format; `docs/protocol.md` is the specification.
public enum Wire {
    public static let version: Int64 = 1
    /// The largest body a frame may carry (the bytes after the 4-byte length).
    public static let maxBodySize = 4096
    /// The largest value one field may carry.
    public static let maxFieldSize = 1024
    public static let lengthPrefixSize = 4
}

/// A message type: the first two bytes of a frame's body.
public struct MessageType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let hello = MessageType(rawValue: 0x0001)
    public static let status = MessageType(rawValue: 0x0002)
    public static let canEvaluate = MessageType(rawValue: 0x0003)
    public static let evaluate = MessageType(rawValue: 0x0004)
    public static let enroll = MessageType(rawValue: 0x0005)
    public static let list = MessageType(rawValue: 0x0006)
    public static let delete = MessageType(rawValue: 0x0007)
    public static let devices = MessageType(rawValue: 0x0008)
    public static let simulate = MessageType(rawValue: 0x0009)
    public static let passcodeSet = MessageType(rawValue: 0x000A)
    public static let passcodeRemove = MessageType(rawValue: 0x000B)
    public static let lockoutReset = MessageType(rawValue: 0x000C)
    public static let rightSave = MessageType(rawValue: 0x000D)
    public static let rightGet = MessageType(rawValue: 0x000E)
    public static let rightRemove = MessageType(rawValue: 0x000F)
    public static let rightUse = MessageType(rawValue: 0x0013)
    public static let importFprintd = MessageType(rawValue: 0x0014)
    /// Subscribes to changes of the caller's own environment (`LAEnvironment`): not a request to
    /// `Daemon.handle`, the socket's door keeps it (docs/protocol.md, "Watching the environment").
    public static let watch = MessageType(rawValue: 0x0015)
    /// The next request is made for another process, whose pidfd follows (docs/protocol.md, "The requester").
    public static let requester = MessageType(rawValue: 0x0016)
    public static let cancel = MessageType(rawValue: 0x0010)
    public static let passcode = MessageType(rawValue: 0x0011)
    public static let fallback = MessageType(rawValue: 0x0012)
    /// The PAM module tells the daemon that the account's password just succeeded (from pam_setcred).
    public static let passwordUsed = MessageType(rawValue: 0x0020)
    public static let welcome = MessageType(rawValue: 0x8001)
    public static let event = MessageType(rawValue: 0x8002)
    public static let result = MessageType(rawValue: 0x8003)
    /// The daemon reads no more frames until the one byte carrying the requester's pidfd.
    public static let descriptorWanted = MessageType(rawValue: 0x8004)
    public static let error = MessageType(rawValue: 0x80FF)

    /// Ordered pairs, not a Dictionary: building a `[UInt16: String]` makes the runtime find UInt16's
    /// Hashable conformance by scanning every conformance record in the binary, on the daemon's
    /// first frame (docs/performance.md, "Cold start and `list`, taken apart").
    static let names: [(type: UInt16, name: String)] = [
        (0x0001, "HELLO"), (0x0002, "STATUS"), (0x0003, "CAN_EVALUATE"), (0x0004, "EVALUATE"), (0x0005, "ENROLL"),
        (0x0006, "LIST"), (0x0007, "DELETE"), (0x0008, "DEVICES"), (0x0009, "SIMULATE"), (0x000A, "PASSCODE_SET"),
        (0x000B, "PASSCODE_REMOVE"), (0x000C, "LOCKOUT_RESET"), (0x000D, "RIGHT_SAVE"), (0x000E, "RIGHT_GET"),
        (0x000F, "RIGHT_REMOVE"), (0x0010, "CANCEL"), (0x0011, "PASSCODE"), (0x0012, "FALLBACK"), (0x0013, "RIGHT_USE"),
        (0x0014, "IMPORT_FPRINTD"), (0x0015, "WATCH"), (0x0016, "REQUESTER"), (0x0020, "PASSWORD_USED"),
        (0x8001, "WELCOME"), (0x8002, "EVENT"), (0x8003, "RESULT"), (0x8004, "DESCRIPTOR_WANTED"), (0x80FF, "ERROR"),
    ]
    private var name: String? { Self.names.first { $0.type == rawValue }?.name }
    public var isKnown: Bool { name != nil }
    public var description: String { name ?? "0x\(String(rawValue, radix: 16))" }
}

/// How a field's value is encoded.
public enum FieldKind: Sendable {
    /// Exactly 8 bytes, signed, big-endian.
    case int
    /// UTF-8 without NUL.
    case string
    case bytes
}

/// A field tag, with the kind of value it carries and whether it may repeat.
public struct FieldTag: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let version = FieldTag(rawValue: 1)
    public static let peerName = FieldTag(rawValue: 2)
    public static let user = FieldTag(rawValue: 3)
    public static let service = FieldTag(rawValue: 4)
    public static let tty = FieldTag(rawValue: 5)
    public static let policy = FieldTag(rawValue: 6)
    public static let reason = FieldTag(rawValue: 7)
    public static let fallbackTitle = FieldTag(rawValue: 8)
    public static let cancelTitle = FieldTag(rawValue: 9)
    public static let flags = FieldTag(rawValue: 10)
    public static let reuseSeconds = FieldTag(rawValue: 11)
    public static let tries = FieldTag(rawValue: 12)
    public static let timeoutMs = FieldTag(rawValue: 13)
    public static let finger = FieldTag(rawValue: 14)
    public static let code = FieldTag(rawValue: 15)
    public static let message = FieldTag(rawValue: 16)
    public static let event = FieldTag(rawValue: 17)
    public static let stage = FieldTag(rawValue: 18)
    public static let stages = FieldTag(rawValue: 19)
    public static let triesLeft = FieldTag(rawValue: 20)
    public static let delayMs = FieldTag(rawValue: 21)
    public static let hint = FieldTag(rawValue: 22)
    public static let passcode = FieldTag(rawValue: 23)
    public static let oldPasscode = FieldTag(rawValue: 24)
    public static let action = FieldTag(rawValue: 25)
    public static let argument = FieldTag(rawValue: 26)
    public static let biometryType = FieldTag(rawValue: 27)
    public static let domainState = FieldTag(rawValue: 28)
    public static let readerPresent = FieldTag(rawValue: 29)
    public static let enrolledCount = FieldTag(rawValue: 30)
    public static let device = FieldTag(rawValue: 31)
    public static let name = FieldTag(rawValue: 32)
    public static let driver = FieldTag(rawValue: 33)
    public static let deviceId = FieldTag(rawValue: 34)
    public static let enrollStages = FieldTag(rawValue: 35)
    public static let capabilities = FieldTag(rawValue: 36)
    public static let biometryLocked = FieldTag(rawValue: 37)
    public static let passcodeSet = FieldTag(rawValue: 38)
    public static let identifier = FieldTag(rawValue: 39)
    public static let requirement = FieldTag(rawValue: 40)
    public static let secret = FieldTag(rawValue: 41)
    public static let publicKey = FieldTag(rawValue: 42)
    public static let operation = FieldTag(rawValue: 43)
    public static let algorithm = FieldTag(rawValue: 44)
    public static let data = FieldTag(rawValue: 45)
    public static let requestedSize = FieldTag(rawValue: 46)
    public static let sharedInfo = FieldTag(rawValue: 47)
    public static let sensorInaccessible = FieldTag(rawValue: 48)
    /// EVENT, RESULT: the `message` as a phrase, for the client to render in its language (PhraseWire.swift).
    public static let phrase = FieldTag(rawValue: 49)
    public static let phraseId = FieldTag(rawValue: 50)
    public static let phraseText = FieldTag(rawValue: 51)
    public static let phraseNumber = FieldTag(rawValue: 52)
    /// STATUS: `passwordReason` as a phrase.
    public static let passwordReasonPhrase = FieldTag(rawValue: 53)
    /// STATUS: 0 the password rules are not enforced, 1 the finger is accepted, 2 the password is required.
    public static let passwordRule = FieldTag(rawValue: 60)
    /// STATUS: why the password is required, one line.
    public static let passwordReason = FieldTag(rawValue: 61)
    /// STATUS: until when (wall clock, ms) the finger is accepted unless the password is used again.
    public static let fingerUntilMs = FieldTag(rawValue: 62)

    typealias Row = (name: String, kind: FieldKind, repeated: Bool)

    /// Kind and repeatability of each known tag, indexed by the tag; unknown tags are skipped by
    /// decoders. An array and not a dictionary: every frame looks tags up, and a client's first
    /// hashed lookup made the runtime scan every conformance record in the binary.
    static let table: [Row?] = {
        var rows = [Row?](repeating: nil, count: Int(entries.map(\.tag).max() ?? 0) + 1)
        for entry in entries { rows[Int(entry.tag)] = entry.row }
        return rows
    }()

    private static let entries: [(tag: UInt16, row: Row)] = [
        (1, ("version", .int, false)), (2, ("peerName", .string, false)), (3, ("user", .string, false)),
        (4, ("service", .string, false)), (5, ("tty", .string, false)), (6, ("policy", .int, false)),
        (7, ("reason", .string, false)), (8, ("fallbackTitle", .string, false)), (9, ("cancelTitle", .string, false)),
        (10, ("flags", .int, false)), (11, ("reuseSeconds", .int, false)), (12, ("tries", .int, false)),
        (13, ("timeoutMs", .int, false)), (14, ("finger", .string, true)), (15, ("code", .int, false)),
        (16, ("message", .string, false)), (17, ("event", .int, false)), (18, ("stage", .int, false)),
        (19, ("stages", .int, false)), (20, ("triesLeft", .int, false)), (21, ("delayMs", .int, false)),
        (22, ("hint", .int, false)), (23, ("passcode", .string, false)), (24, ("oldPasscode", .string, false)),
        (25, ("action", .string, false)), (26, ("argument", .string, false)), (27, ("biometryType", .int, false)),
        (28, ("domainState", .bytes, false)), (29, ("readerPresent", .int, false)),
        (30, ("enrolledCount", .int, false)),
        (31, ("device", .bytes, true)), (32, ("name", .string, false)), (33, ("driver", .string, false)),
        (34, ("deviceId", .string, false)), (35, ("enrollStages", .int, false)), (36, ("capabilities", .int, false)),
        (37, ("biometryLocked", .int, false)), (38, ("passcodeSet", .int, false)), (39, ("identifier", .string, false)),
        (40, ("requirement", .int, false)), (41, ("secret", .bytes, false)), (42, ("publicKey", .bytes, false)),
        (43, ("operation", .int, false)), (44, ("algorithm", .string, false)), (45, ("data", .bytes, false)),
        (46, ("requestedSize", .int, false)), (47, ("sharedInfo", .bytes, false)),
        (48, ("sensorInaccessible", .int, false)), (49, ("phrase", .bytes, false)), (50, ("phraseId", .string, true)),
        (51, ("phraseText", .string, true)), (52, ("phraseNumber", .int, true)),
        (53, ("passwordReasonPhrase", .bytes, false)),
        (60, ("passwordRule", .int, false)), (61, ("passwordReason", .string, false)),
        (62, ("fingerUntilMs", .int, false)),
    ]

    private static func row(_ tag: UInt16) -> Row? { Int(tag) < table.count ? table[Int(tag)] : nil }
    public var kind: FieldKind? { Self.row(rawValue)?.kind }
    public var isRepeated: Bool { Self.row(rawValue)?.repeated ?? true }
    public var description: String { Self.row(rawValue)?.name ?? "tag\(rawValue)" }
}

/// Why bytes were refused. Maps one to one onto `ProtocolErrorCode`.
public enum ProtocolError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformed(String)
    case tooLarge(Int)
    case unsupportedVersion(Int64)
    case unexpectedMessage(MessageType)
    case unknownMessage(MessageType)

    public var code: ProtocolErrorCode {
        switch self {
        case .malformed: .malformed
        case .tooLarge: .tooLarge
        case .unsupportedVersion: .unsupportedVersion
        case .unexpectedMessage: .unexpectedMessage
        case .unknownMessage: .unknownMessage
        }
    }

    public var description: String {
        switch self {
        case .malformed(let why): "malformed frame: \(why)"
        case .tooLarge(let size): "frame of \(size) bytes is larger than \(Wire.maxBodySize)"
        case .unsupportedVersion(let v): "protocol version \(v) is not supported (this daemon speaks \(Wire.version))"
        case .unexpectedMessage(let t): "\(t) is not allowed here"
        case .unknownMessage(let t): "unknown message type \(t)"
        }
    }
}

/// `code` of an ERROR frame.
public enum ProtocolErrorCode: Int64, Sendable {
    case malformed = 1
    case tooLarge = 2
    case unsupportedVersion = 3
    case unexpectedMessage = 4
    case unknownMessage = 5
    case tooManyConnections = 6
    case timeout = 7
}
