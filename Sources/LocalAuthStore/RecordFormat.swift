import LocalAuthCore

// SPDX-License-Identifier: Apache-2.0
import enum LocalAuthProtocol.FingerName

/// CRC-32 (IEEE 802.3, the zlib polynomial), computed here because the daemon does not link zlib
/// or Foundation. It detects truncation and garbage, not tampering: that is what ownership and
/// modes are for.
enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        var crc = UInt32(index)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        return crc
    }

    static func checksum<C: Collection>(_ bytes: C) -> UInt32 where C.Element == UInt8 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}

/// Lowercase hexadecimal, for the domain state and checksums.
enum Hex {
    static func encode<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Strict: lowercase only, even length; nil otherwise.
    static func decode(_ text: Substring) -> [UInt8]? {
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            default: return nil
            }
        }
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 2)
        var index = 0
        while index < chars.count {
            guard let high = nibble(chars[index]), let low = nibble(chars[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }
}

/// Every file the store writes ends with one line, `crc32=<8 hex digits>\n`, the CRC-32 of all the
/// bytes before it. A file that does not end so (truncated, garbage, half-written) is corrupt.
enum Seal {
    static let prefix = Array("crc32=".utf8)
    /// `crc32=` + 8 digits + newline.
    static let lineLength = prefix.count + 9

    static func seal(_ body: [UInt8]) -> [UInt8] {
        body + Array("crc32=\(hex8(CRC32.checksum(body)))\n".utf8)
    }

    /// The body, or why the seal does not hold.
    static func open(_ bytes: [UInt8]) -> Result<ArraySlice<UInt8>, FormatError> {
        guard bytes.count >= lineLength, bytes.last == UInt8(ascii: "\n") else {
            return .failure(FormatError("truncated: no checksum line"))
        }
        let lineStart = bytes.count - lineLength
        guard lineStart == 0 || bytes[lineStart - 1] == UInt8(ascii: "\n"),
            bytes[lineStart..<lineStart + prefix.count].elementsEqual(prefix),
            let stored = Hex.decode(
                Substring(decoding: bytes[lineStart + prefix.count..<bytes.count - 1], as: UTF8.self)),
            stored.count == 4
        else {
            return .failure(FormatError("truncated or garbage: no checksum line"))
        }
        let expected = stored.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let body = bytes[..<lineStart]
        guard CRC32.checksum(body) == expected else { return .failure(FormatError("checksum mismatch")) }
        return .success(body)
    }

    /// A cursor after the version line `header` of a sealed file, or why the file is refused.
    static func openRecord(_ bytes: [UInt8], header: String) -> Result<ByteCursor, FormatError> {
        switch open(bytes) {
        case .success(let body):
            var cursor = ByteCursor(body)
            guard cursor.line() == Substring(header) else { return .failure(FormatError("unknown format or version")) }
            return .success(cursor)
        case .failure(let error): return .failure(error)
        }
    }

    static func hex8(_ value: UInt32) -> String {
        Hex.encode([UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)])
    }
}

/// Why a file's contents were refused; the text goes into `StateLoad.corrupt` and notices.
struct FormatError: Error, Equatable {
    var reason: String
    init(_ reason: String) { self.reason = reason }
}

/// Reads `\n`-terminated lines and raw byte runs off a sealed body.
struct ByteCursor {
    let bytes: ArraySlice<UInt8>
    var position: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        position = bytes.startIndex
    }

    var isAtEnd: Bool { position == bytes.endIndex }

    /// The next line without its newline, as UTF-8; nil at the end, on a missing newline or bad UTF-8.
    mutating func line() -> Substring? {
        guard let newline = bytes[position...].firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        let raw = bytes[position..<newline]
        guard let text = String(validating: raw, as: UTF8.self) else { return nil }
        position = newline + 1
        return Substring(text)
    }

    /// The value of the next line when that line is `key=value`; nil otherwise (the line is read
    /// either way: a record that fails here is refused whole).
    mutating func field(_ key: String) -> Substring? {
        guard let line = self.line(), line.hasPrefix(key + "=") else { return nil }
        return line.dropFirst(key.count + 1)
    }

    mutating func take(_ count: Int) -> ArraySlice<UInt8>? {
        guard count >= 0, bytes.endIndex - position >= count else { return nil }
        defer { position += count }
        return bytes[position..<position + count]
    }
}

/// The user record: a version line, one `key=value` line per field in a fixed order, the seal.
///
///     localauthd-user-state 1
///     fingerFailures=0
///     biometryLocked=0
///     passcodeFailures=0
///     passcodeLockedUntilMs=0
///     lastSeenMs=1760000000000
///     passcodeHash=$y$j9T$…        (empty when no passcode is set)
///     domainState=<64 hex digits>  (empty before the first enrolment)
///     crc32=1a2b3c4d
///
/// Decoding is strict: the fixed order, no unknown or repeated keys, canonical numbers. A newer
/// version is refused (fail closed) rather than guessed at.
enum StateRecord {
    static let header = "localauthd-user-state 1"
    static let keys = [
        "fingerFailures", "biometryLocked", "passcodeFailures", "passcodeLockedUntilMs", "lastSeenMs", "passcodeHash",
        "domainState",
    ]
    static let maximumDomainStateBytes = 64

    /// The characters of a crypt(5) hash string; anything else (a newline above all) is refused.
    static func isCryptText(_ text: String) -> Bool {
        text.utf8.count <= 512 && Validation.isAlphanumeric(text.utf8, or: "$./")
    }

    static func encode(_ state: UserAuthState) throws(StoreError) -> [UInt8] {
        if let hash = state.passcodeHash, hash.isEmpty || !isCryptText(hash) {
            throw .invalidArgument("passcode hash is not a crypt(5) string")
        }
        guard state.domainState.count <= maximumDomainStateBytes else {
            throw .invalidArgument("domain state longer than \(maximumDomainStateBytes) bytes")
        }
        guard state.fingerFailures >= 0, state.passcodeFailures >= 0 else {
            throw .invalidArgument("negative failure counter")
        }
        let values = [
            String(state.fingerFailures), state.biometryLocked ? "1" : "0", String(state.passcodeFailures),
            String(state.passcodeLockedUntilMs), String(state.lastSeenMs), state.passcodeHash ?? "",
            Hex.encode(state.domainState),
        ]
        var text = header + "\n"
        for (key, value) in zip(keys, values) { text += "\(key)=\(value)\n" }
        return Seal.seal(Array(text.utf8))
    }

    static func decode(_ bytes: [UInt8]) -> Result<UserAuthState, FormatError> {
        let body: ArraySlice<UInt8>
        switch Seal.open(bytes) {
        case .success(let b): body = b
        case .failure(let error): return .failure(error)
        }
        var cursor = ByteCursor(body)
        guard let first = cursor.line() else { return .failure(FormatError("no version line")) }
        guard first == header else {
            if let version = newerVersion(bytes) {
                return .failure(FormatError("record version \(version), newer than this localauthd's \(version1)"))
            }
            return .failure(FormatError("unknown format or version"))
        }
        var values: [Substring] = []
        for key in keys {
            guard let line = cursor.line(), let equals = line.firstIndex(of: "="), line[..<equals] == key else {
                return .failure(FormatError("expected the field \(key)"))
            }
            values.append(line[line.index(after: equals)...])
        }
        guard cursor.isAtEnd else { return .failure(FormatError("unexpected lines after the fields")) }

        guard let fingerFailures = canonicalInt(values[0]), fingerFailures >= 0,
            let passcodeFailures = canonicalInt(values[2]), passcodeFailures >= 0
        else { return .failure(FormatError("bad failure counter")) }
        guard values[1] == "0" || values[1] == "1" else { return .failure(FormatError("bad biometryLocked")) }
        guard let lockedUntil = canonicalInt(values[3]).map(Int64.init),
            let lastSeen = canonicalInt(values[4]).map(Int64.init)
        else { return .failure(FormatError("bad time")) }
        let hash = String(values[5])
        guard hash.isEmpty || isCryptText(hash) else { return .failure(FormatError("bad passcode hash")) }
        guard let domainState = Hex.decode(values[6]), domainState.count <= maximumDomainStateBytes else {
            return .failure(FormatError("bad domain state"))
        }
        return .success(
            UserAuthState(
                fingerFailures: fingerFailures, biometryLocked: values[1] == "1", passcodeFailures: passcodeFailures,
                passcodeLockedUntilMs: lockedUntil, lastSeenMs: lastSeen, passcodeHash: hash.isEmpty ? nil : hash,
                domainState: domainState))
    }

    /// The version this one reads.
    static let version1 = 1
    static let headerPrefix = "localauthd-user-state "

    /// The record version a newer localauthd wrote `bytes` in: the seal holds and the version line is
    /// ours with a greater number. nil for our own version, and for damage (a flipped digit breaks the
    /// seal): such a record is kept as it is, never reset over (a downgrade, then the upgrade again).
    static func newerVersion(_ bytes: [UInt8]) -> Int? {
        guard case .success(let body) = Seal.open(bytes) else { return nil }
        var cursor = ByteCursor(body)
        guard let first = cursor.line(), first.hasPrefix(headerPrefix),
            let version = canonicalInt(first.dropFirst(headerPrefix.count)), version > version1
        else { return nil }
        return version
    }

    /// The passcode hash of a record that fails to decode, for `resetState`: only from a record whose
    /// version line is ours and whose `passcodeHash` line is a well-formed yescrypt string. A bit flip
    /// inside the hash only makes it unverifiable; it cannot make a wrong passcode verify.
    static func salvagePasscodeHash(_ bytes: [UInt8]) -> String? {
        let text = String(decoding: bytes, as: UTF8.self)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.first == Substring(header) else { return nil }
        let hashes = lines.filter { $0.hasPrefix("passcodeHash=") }.map { String($0.dropFirst("passcodeHash=".count)) }
        guard hashes.count == 1, let hash = hashes.first, PasscodeHasher.isYescryptHash(hash) else { return nil }
        return hash
    }

    /// A decimal integer written as `String(Int)` would write it: no `+`, no leading zeros, no spaces.
    static func canonicalInt(_ text: Substring) -> Int? {
        guard let value = Int(text), String(value) == text else { return nil }
        return value
    }
}

/// One enrolled print: a version line, its identity, its length, the raw bytes, the seal.
///
///     localauthd-print 1
///     finger=right-index-finger
///     deviceKey=virtual_device-0
///     enrolledAtMs=1760000000000
///     sequence=3
///     dataLength=61
///     <61 raw bytes>\n
///     crc32=1a2b3c4d
///
/// `sequence` orders enrolments (it only grows for a user). The file name repeats finger and device
/// key; a file whose contents disagree with its name (renamed or copied in) is corrupt.
enum PrintRecord {
    static let header = "localauthd-print 1"

    struct Decoded: Equatable {
        var print: StoredPrint
        var sequence: Int
    }

    /// `<finger>@<deviceKey>.print`: `@` occurs in neither, so the name splits unambiguously.
    static func fileName(finger: FingerName, deviceKey: String) -> String { "\(finger.rawValue)@\(deviceKey).print" }

    /// (finger, deviceKey) for a well-formed print file name, else nil.
    static func parseFileName(_ name: String) -> (finger: FingerName, deviceKey: String)? {
        guard name.hasSuffix(".print"), let at = name.firstIndex(of: "@") else { return nil }
        let deviceKey = String(name[name.index(after: at)..<name.index(name.endIndex, offsetBy: -".print".count)])
        guard let finger = FingerName(rawValue: String(name[..<at])), Validation.isSafeName(deviceKey) else {
            return nil
        }
        return (finger, deviceKey)
    }

    static func encode(_ print: StoredPrint, sequence: Int) -> [UInt8] {
        var body = Array(
            """
            \(header)
            finger=\(print.finger.rawValue)
            deviceKey=\(print.deviceKey)
            enrolledAtMs=\(print.enrolledAtMs)
            sequence=\(sequence)
            dataLength=\(print.data.count)

            """.utf8)
        body += print.data
        body.append(UInt8(ascii: "\n"))
        return Seal.seal(body)
    }

    static func decode(_ bytes: [UInt8], expectedFinger: FingerName, expectedDeviceKey: String) -> Result<
        Decoded, FormatError
    > {
        var cursor: ByteCursor
        switch Seal.openRecord(bytes, header: header) {
        case .success(let c): cursor = c
        case .failure(let error): return .failure(error)
        }
        guard let finger = cursor.field("finger"), let deviceKey = cursor.field("deviceKey"),
            let enrolledAt = cursor.field("enrolledAtMs").flatMap(StateRecord.canonicalInt),
            let sequence = cursor.field("sequence").flatMap(StateRecord.canonicalInt),
            let length = cursor.field("dataLength").flatMap(StateRecord.canonicalInt),
            (1...StoredPrint.maximumDataSize).contains(length)
        else { return .failure(FormatError("bad header")) }
        guard finger == expectedFinger.rawValue, deviceKey == expectedDeviceKey else {
            return .failure(FormatError("contents do not match the file name"))
        }
        guard let data = cursor.take(length), cursor.take(1) == [UInt8(ascii: "\n")], cursor.isAtEnd else {
            return .failure(FormatError("bad data length"))
        }
        return .success(
            Decoded(
                print: StoredPrint(
                    finger: expectedFinger, deviceKey: String(deviceKey), data: Array(data),
                    enrolledAtMs: Int64(enrolledAt)),
                sequence: sequence))
    }
}
