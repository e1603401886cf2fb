// SPDX-License-Identifier: Apache-2.0
// The D-Bus values the doors and logind's replies use, and their marshalling into and out of sd-bus
// messages.
import CSystemd
import Dispatch

#if canImport(Glibc)
    import Glibc
#endif

/// A D-Bus value, as far as the fprintd, polkit and logind APIs need them.
public indirect enum BusValue: Equatable, Sendable {
    case string(String)
    case objectPath(String)
    case bool(Bool)
    case int32(Int32)
    case uint32(UInt32)
    /// An array; `element` is the signature of its elements (needed when it is empty).
    case array(element: String, [BusValue])
    case structure([BusValue])
    case variant(BusValue)
    case dictEntry(BusValue, BusValue)
    /// A value of a basic type not modelled here (`t`, `x`, `q`, `n`, `y`, `d`, `h`), skipped when
    /// read so that what follows it is read; it names its type and cannot be sent. A container of
    /// such values reads as the container with these inside.
    case unmodeled(signature: String)

    public var signature: String {
        switch self {
        case .string: "s"
        case .objectPath: "o"
        case .bool: "b"
        case .int32: "i"
        case .uint32: "u"
        case .array(let element, _): "a" + element
        case .structure(let members): "(" + members.map(\.signature).joined() + ")"
        case .variant: "v"
        case .dictEntry(let key, let value): "{" + key.signature + value.signature + "}"
        case .unmodeled(let signature): signature
        }
    }

    public static func strings(_ values: [String]) -> BusValue { .array(element: "s", values.map { .string($0) }) }
    public static func objectPaths(_ values: [String]) -> BusValue {
        .array(element: "o", values.map { .objectPath($0) })
    }

    public var stringValue: String? {
        switch self {
        case .string(let s), .objectPath(let s): s
        default: nil
        }
    }
    public var boolValue: Bool? {
        if case .bool(let b) = self { b } else { nil }
    }
}

/// An error reply: a D-Bus error name and its message.
public struct BusError: Error, Equatable, Sendable {
    public let name: String
    public let message: String
    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }
}

extension BusConnection {
    // MARK: Values

    /// Appends one value (`sd_bus_message_append_basic`, `sd_bus_message_open_container`).
    static func append(_ value: BusValue, to m: OpaquePointer) -> Int32 {
        func basic(_ type: Character, _ pointer: UnsafeRawPointer) -> Int32 {
            sd_bus_message_append_basic(m, CChar(type.asciiValue!), pointer)
        }
        func container(_ type: Character, _ contents: String, _ members: [BusValue]) -> Int32 {
            var r = sd_bus_message_open_container(m, CChar(type.asciiValue!), contents)
            if r < 0 { return r }
            for member in members {
                r = append(member, to: m)
                if r < 0 { return r }
            }
            return sd_bus_message_close_container(m)
        }
        switch value {
        case .string(let s): return s.withCString { basic("s", $0) }
        case .objectPath(let s): return s.withCString { basic("o", $0) }
        case .bool(let b):
            var v: Int32 = b ? 1 : 0
            return basic("b", &v)
        case .int32(var v): return basic("i", &v)
        case .uint32(var v): return basic("u", &v)
        case .array(let element, let members): return container("a", element, members)
        case .structure(let members): return container("r", String(value.signature.dropFirst().dropLast()), members)
        case .variant(let inner): return container("v", inner.signature, [inner])
        case .dictEntry(let key, let inner):
            return container("e", key.signature + inner.signature, [key, inner])
        case .unmodeled: return -EINVAL
        }
    }

    /// Reads every remaining value of a message (`sd_bus_message_peek_type` and friends); a value of a
    /// type not modelled is skipped and read as `.unmodeled`. Only the message's end or a malformed
    /// message ends the reading.
    static func readAll(_ m: OpaquePointer) -> [BusValue] {
        var values: [BusValue] = []
        while let value = read(m) { values.append(value) }
        return values
    }

    private static func read(_ m: OpaquePointer) -> BusValue? {
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        guard sd_bus_message_peek_type(m, &type, &contents) > 0 else { return nil }
        func readString() -> String? {
            var p: UnsafePointer<CChar>?
            guard sd_bus_message_read_basic(m, type, &p) > 0, let p else { return nil }
            return String(cString: p)
        }
        func members(_ kind: Character) -> [BusValue]? {
            guard sd_bus_message_enter_container(m, CChar(kind.asciiValue!), contents) > 0 else { return nil }
            let inner = readAll(m)
            guard sd_bus_message_exit_container(m) >= 0 else { return nil }
            return inner
        }
        switch UInt8(bitPattern: type) {
        case UInt8(ascii: "s"), UInt8(ascii: "g"): return readString().map { .string($0) }
        case UInt8(ascii: "o"): return readString().map { .objectPath($0) }
        case UInt8(ascii: "b"):
            var v: Int32 = 0
            return sd_bus_message_read_basic(m, type, &v) > 0 ? .bool(v != 0) : nil
        case UInt8(ascii: "i"):
            var v: Int32 = 0
            return sd_bus_message_read_basic(m, type, &v) > 0 ? .int32(v) : nil
        case UInt8(ascii: "u"):
            var v: UInt32 = 0
            return sd_bus_message_read_basic(m, type, &v) > 0 ? .uint32(v) : nil
        case UInt8(ascii: "a"):
            let element = contents.map { String(cString: $0) } ?? ""
            return members("a").map { .array(element: element, $0) }
        case UInt8(ascii: "r"): return members("r").map { .structure($0) }
        case UInt8(ascii: "e"):
            guard let pair = members("e"), pair.count == 2 else { return nil }
            return .dictEntry(pair[0], pair[1])
        case UInt8(ascii: "v"):
            guard let inner = members("v"), inner.count == 1 else { return nil }
            return .variant(inner[0])
        default:
            // A basic type not modelled: skipped, so that the values after it are read.
            let signature = String(UnicodeScalar(UInt8(bitPattern: type)))
            return sd_bus_message_skip(m, signature) >= 0 ? .unmodeled(signature: signature) : nil
        }
    }
}
