// SPDX-License-Identifier: Apache-2.0

/// One field as it stands on the wire.
public struct Field: Equatable, Sendable {
    public var tag: FieldTag
    public var value: [UInt8]
    public init(tag: FieldTag, value: [UInt8]) {
        self.tag = tag
        self.value = value
    }
}

/// A decoded frame: a message type and its fields in wire order.
///
/// Decoding validates the framing, the kind of every known field and the uniqueness of
/// singular fields, so that the typed accessors below never see a bad value.
public struct Frame: Equatable, Sendable {
    public var type: MessageType
    public var fields: [Field]

    public init(_ type: MessageType, _ fields: [Field] = []) {
        self.type = type
        self.fields = fields
    }

    // MARK: Building

    public mutating func append(_ tag: FieldTag, int value: Int64) {
        let bits = UInt64(bitPattern: value)
        fields.append(Field(tag: tag, value: (0..<8).map { UInt8(truncatingIfNeeded: bits >> (56 - 8 * $0)) }))
    }

    public mutating func append(_ tag: FieldTag, string value: String) {
        fields.append(Field(tag: tag, value: Array(value.utf8)))
    }

    /// Text a person reads (a message, a prompt): cut at a character boundary to the field limit,
    /// "…" marking the cut, so that however long the text grows, the field fits.
    public mutating func append(_ tag: FieldTag, text value: String) {
        append(tag, string: Echo.truncated(value, maxBytes: Wire.maxFieldSize))
    }

    public mutating func append(_ tag: FieldTag, bytes value: [UInt8]) {
        fields.append(Field(tag: tag, value: value))
    }

    public mutating func append(_ tag: FieldTag, bool value: Bool) {
        append(tag, int: value ? 1 : 0)
    }

    /// Appends the field when the value is not nil.
    public mutating func append(_ tag: FieldTag, optionalInt value: Int64?) {
        if let value { append(tag, int: value) }
    }

    public mutating func append(_ tag: FieldTag, optionalString value: String?) {
        if let value { append(tag, string: value) }
    }

    // MARK: Reading

    public func first(_ tag: FieldTag) -> [UInt8]? {
        fields.first { $0.tag == tag }?.value
    }

    public func int(_ tag: FieldTag) -> Int64? {
        first(tag).map(Self.decodeInt)
    }

    public func string(_ tag: FieldTag) -> String? {
        first(tag).map { String(decoding: $0, as: UTF8.self) }
    }

    public func strings(_ tag: FieldTag) -> [String] {
        fields.filter { $0.tag == tag }.map { String(decoding: $0.value, as: UTF8.self) }
    }

    public func bytes(_ tag: FieldTag) -> [UInt8]? { first(tag) }

    public func allBytes(_ tag: FieldTag) -> [[UInt8]] {
        fields.filter { $0.tag == tag }.map(\.value)
    }

    public func bool(_ tag: FieldTag) -> Bool? { int(tag).map { $0 != 0 } }

    static func decodeInt(_ bytes: [UInt8]) -> Int64 {
        Int64(bitPattern: bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
    }

    // MARK: Encoding

    /// The frame's bytes, length prefix included. Traps if the frame breaks the limits: for
    /// frames a program builds from its own values. A frame that carries anything a peer sent
    /// goes through `encode()`, which throws instead.
    public func encoded() -> [UInt8] {
        do {
            return try encode()
        } catch {
            preconditionFailure("\(type) frame breaks the wire limits: \(error)")
        }
    }

    /// The frame's bytes, length prefix included; `tooLarge` when a field or the body breaks the
    /// limits of `docs/protocol.md`.
    public func encode() throws(ProtocolError) -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(64)
        Self.put16(type.rawValue, into: &body)
        body.append(contentsOf: try Self.encode(fields: fields))
        guard body.count <= Wire.maxBodySize else { throw .tooLarge(body.count) }
        var out: [UInt8] = []
        out.reserveCapacity(body.count + 4)
        let n = UInt32(body.count)
        out.append(contentsOf: [
            UInt8(n >> 24), UInt8(truncatingIfNeeded: n >> 16), UInt8(truncatingIfNeeded: n >> 8),
            UInt8(truncatingIfNeeded: n),
        ])
        out.append(contentsOf: body)
        return out
    }

    /// Fields in wire form; also used for the nested field lists of `device`. Traps on a field
    /// over the limit (see `encoded()`).
    public static func encodeFields(_ fields: [Field]) -> [UInt8] {
        do {
            return try encode(fields: fields)
        } catch {
            preconditionFailure("\(error)")
        }
    }

    /// Fields in wire form; `malformed` for a field over `Wire.maxFieldSize`.
    public static func encode(fields: [Field]) throws(ProtocolError) -> [UInt8] {
        var out: [UInt8] = []
        for field in fields {
            guard field.value.count <= Wire.maxFieldSize else {
                throw .malformed("field \(field.tag) of \(field.value.count) bytes exceeds \(Wire.maxFieldSize)")
            }
            put16(field.tag.rawValue, into: &out)
            put16(UInt16(field.value.count), into: &out)
            out.append(contentsOf: field.value)
        }
        return out
    }

    private static func put16(_ v: UInt16, into out: inout [UInt8]) {
        out.append(UInt8(v >> 8))
        out.append(UInt8(truncatingIfNeeded: v))
    }

    // MARK: Decoding

    /// Decodes a body (the bytes after the length prefix).
    public static func decode(body: some Collection<UInt8>) throws(ProtocolError) -> Frame {
        let body = Array(body)
        guard body.count >= 2 else { throw .malformed("body shorter than its type") }
        guard body.count <= Wire.maxBodySize else { throw .tooLarge(body.count) }
        let type = MessageType(rawValue: UInt16(body[0]) << 8 | UInt16(body[1]))
        return Frame(type, try decodeFields(body[2...]))
    }

    /// Decodes and validates a field list.
    public static func decodeFields(_ bytes: ArraySlice<UInt8>) throws(ProtocolError) -> [Field] {
        var fields: [Field] = []
        // An array, not a Set: the first Set<UInt16> of a process makes the runtime find UInt16's
        // Hashable conformance by scanning every conformance record in the binary, a quarter of a
        // `localauthctl list`'s instructions (docs/performance.md). It holds each known tag once
        // at most (a repeat is refused), so it stays as short as the tag table.
        var seen: [UInt16] = []
        var i = bytes.startIndex
        while i < bytes.endIndex {
            guard bytes.endIndex - i >= 4 else { throw .malformed("truncated field header") }
            let tag = FieldTag(rawValue: UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1]))
            let size = Int(UInt16(bytes[i + 2]) << 8 | UInt16(bytes[i + 3]))
            i += 4
            guard size <= Wire.maxFieldSize else { throw .malformed("field \(tag) of \(size) bytes") }
            guard bytes.endIndex - i >= size else { throw .malformed("field \(tag) runs past the frame") }
            let value = Array(bytes[i..<i + size])
            i += size
            guard let kind = tag.kind else {
                // Unknown tags are kept, unvalidated, and ignored by the typed readers: forward compatibility.
                fields.append(Field(tag: tag, value: value))
                continue
            }
            if !tag.isRepeated {
                guard !seen.contains(tag.rawValue) else { throw .malformed("field \(tag) repeated") }
                seen.append(tag.rawValue)
            }
            switch kind {
            case .int:
                guard size == 8 else { throw .malformed("integer field \(tag) of \(size) bytes") }
            case .string:
                guard !value.contains(0), String(validating: value, as: UTF8.self) != nil else {
                    throw .malformed("field \(tag) is not UTF-8 text")
                }
            case .bytes:
                break
            }
            fields.append(Field(tag: tag, value: value))
        }
        return fields
    }
}

/// Splits a byte stream into frames. Refuses an oversized length before buffering its body.
public struct FrameReader: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0

    public init() {}

    public mutating func append(_ bytes: some Sequence<UInt8>) {
        buffer.append(contentsOf: bytes)
    }

    /// Bytes received that do not yet form a whole frame.
    public var pendingByteCount: Int { buffer.count - start }

    /// The next whole frame, or nil when more bytes are needed.
    public mutating func next() throws(ProtocolError) -> Frame? {
        let available = buffer.count - start
        guard available >= Wire.lengthPrefixSize else { return nil }
        let length = buffer[start..<start + 4].reduce(0) { $0 << 8 | Int($1) }
        guard length >= 2 else { throw .malformed("frame length \(length)") }
        guard length <= Wire.maxBodySize else { throw .tooLarge(length) }
        guard available >= 4 + length else { return nil }
        let body = buffer[start + 4..<start + 4 + length]
        start += 4 + length
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 8192 {
            buffer.removeFirst(start)
            start = 0
        }
        return try Frame.decode(body: body)
    }
}
