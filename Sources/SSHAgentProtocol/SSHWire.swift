// SPDX-License-Identifier: Apache-2.0
#if canImport(SHA2)
    // A module of its own in the package; compiled into the same module by the fuzzer's swiftc
    // (fuzz/fuzz.mk), where there is nothing to import.
    import SHA2
#endif

/// Reads RFC 4251's types from a slice: every read checks its bounds and throws, never traps.
public struct SSHReader {
    private var bytes: ArraySlice<UInt8>

    public init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }
    public init(_ bytes: [UInt8]) { self.bytes = bytes[...] }

    public var isAtEnd: Bool { bytes.isEmpty }

    public mutating func byte() throws(AgentCodecError) -> UInt8 {
        guard let b = bytes.first else { throw .malformed("a byte past the end") }
        bytes = bytes.dropFirst()
        return b
    }

    public mutating func bool() throws(AgentCodecError) -> Bool { try byte() != 0 }

    public mutating func uint32() throws(AgentCodecError) -> UInt32 {
        guard bytes.count >= 4 else { throw .malformed("a uint32 past the end") }
        let i = bytes.startIndex
        let v = UInt32(bytes[i]) << 24 | UInt32(bytes[i + 1]) << 16 | UInt32(bytes[i + 2]) << 8 | UInt32(bytes[i + 3])
        bytes = bytes.dropFirst(4)
        return v
    }

    public mutating func string() throws(AgentCodecError) -> [UInt8] {
        let n = Int(try uint32())
        guard bytes.count >= n else { throw .malformed("a string of \(n) bytes past the end") }
        let s = Array(bytes.prefix(n))
        bytes = bytes.dropFirst(n)
        return s
    }

    /// A string that must be UTF-8 (names, comments).
    public mutating func utf8() throws(AgentCodecError) -> String {
        let raw = try string()
        guard let s = String(validating: raw, as: UTF8.self) else { throw .malformed("a name that is not UTF-8") }
        return s
    }

    /// Nothing may follow a message's last field.
    public func finish() throws(AgentCodecError) {
        guard bytes.isEmpty else { throw .malformed("\(bytes.count) bytes after the last field") }
    }
}

public struct SSHWriter {
    public private(set) var bytes: [UInt8] = []
    public init() {}
    public mutating func byte(_ b: UInt8) { bytes.append(b) }
    public mutating func uint32(_ v: UInt32) {
        bytes += [UInt8(v >> 24), UInt8(v >> 16 & 0xff), UInt8(v >> 8 & 0xff), UInt8(v & 0xff)]
    }
    public mutating func string(_ s: [UInt8]) {
        uint32(UInt32(s.count))
        bytes += s
    }
    public mutating func string(_ s: String) { string(Array(s.utf8)) }
}

/// ECDSA P-256 as OpenSSH names and encodes it (RFC 5656).
public enum SSHECDSAKey {
    public static let algorithm = "ecdsa-sha2-nistp256"
    public static let curve = "nistp256"

    /// The public key blob from the X9.63 point (65 bytes: 0x04, X, Y).
    public static func blob(x963 point: [UInt8]) -> [UInt8] {
        var w = SSHWriter()
        w.string(algorithm)
        w.string(curve)
        w.string(point)
        return w.bytes
    }

    /// The X9.63 point of an `ecdsa-sha2-nistp256` blob; nil for any other key.
    public static func point(blob: [UInt8]) -> [UInt8]? {
        var r = SSHReader(blob)
        guard (try? r.utf8()) == algorithm, (try? r.utf8()) == curve, let q = try? r.string(), q.count == 65,
            q[0] == 4, (try? r.finish()) != nil
        else { return nil }
        return q
    }

    /// The line `authorized_keys` and a forge take: `ecdsa-sha2-nistp256 BASE64 comment`.
    public static func publicKeyLine(x963 point: [UInt8], comment: String) -> String {
        "\(algorithm) \(Base64.encode(blob(x963: point))) \(comment)"
    }

    /// A DER ECDSA signature (X9.62: SEQUENCE of INTEGER r, INTEGER s) as the SSH signature blob
    /// `string "ecdsa-sha2-nistp256", string (mpint r, mpint s)`. DER's INTEGER is already the
    /// minimal two's complement that an mpint is; nil when the DER is not that shape.
    public static func signatureBlob(der: [UInt8]) -> [UInt8]? {
        var d = DERReader(der[...])
        guard let sequence = d.element(tag: 0x30), d.isAtEnd else { return nil }
        var inner = DERReader(sequence)
        guard let r = inner.element(tag: 0x02), let s = inner.element(tag: 0x02), inner.isAtEnd, !r.isEmpty,
            !s.isEmpty, r.first! & 0x80 == 0, s.first! & 0x80 == 0
        else { return nil }
        var rs = SSHWriter()
        rs.string(Array(r))
        rs.string(Array(s))
        var w = SSHWriter()
        w.string(algorithm)
        w.string(rs.bytes)
        return w.bytes
    }
}

/// Just enough DER for an ECDSA signature: short and long definite lengths, nothing else.
struct DERReader {
    var bytes: ArraySlice<UInt8>
    init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }
    var isAtEnd: Bool { bytes.isEmpty }

    mutating func element(tag: UInt8) -> ArraySlice<UInt8>? {
        guard bytes.count >= 2, bytes.first == tag else { return nil }
        var rest = bytes.dropFirst()
        let first = rest.removeFirst()
        var length = 0
        if first < 0x80 {
            length = Int(first)
        } else {
            let n = Int(first & 0x7f)
            guard (1...2).contains(n), rest.count >= n else { return nil }
            for _ in 0..<n { length = length << 8 | Int(rest.removeFirst()) }
        }
        guard rest.count >= length else { return nil }
        let value = rest.prefix(length)
        bytes = rest.dropFirst(length)
        return value
    }
}

/// What a signature is for, read from the data the client asks to sign: what the person is told.
public enum SignedDataKind: Equatable, Sendable {
    /// An ssh login (RFC 4252's publickey request): the account it logs in as.
    case userAuthentication(user: String)
    /// `ssh-keygen -Y sign` (git's commit signing among others): its namespace.
    case sshsig(namespace: String)
    case other

    public init(data: [UInt8]) {
        // SSHSIG: the magic preamble, then string namespace (PROTOCOL.sshsig).
        let magic = Array("SSHSIG".utf8)
        if data.starts(with: magic) {
            var r = SSHReader(data[magic.count...])
            if let ns = try? r.utf8() {
                self = .sshsig(namespace: ns)
                return
            }
        }
        // string session id, byte 50, string user, string service, string "publickey", bool, …
        // (OpenSSH 8.9 and later, after session-bind: "publickey-hostbound-v00@openssh.com").
        var r = SSHReader(data)
        if (try? r.string()) != nil, (try? r.byte()) == 50, let user = try? r.utf8(), (try? r.utf8()) != nil,
            let method = try? r.utf8(), method == "publickey" || method == "publickey-hostbound-v00@openssh.com"
        {
            self = .userAuthentication(user: user)
            return
        }
        self = .other
    }
}

public enum Base64 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    public static func encode(_ bytes: [UInt8], padding: Bool = true) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let n = min(3, bytes.count - i)
            let b0 = UInt32(bytes[i])
            let b1 = n > 1 ? UInt32(bytes[i + 1]) : 0
            let b2 = n > 2 ? UInt32(bytes[i + 2]) : 0
            let v = b0 << 16 | b1 << 8 | b2
            out.append(alphabet[Int(v >> 18 & 63)])
            out.append(alphabet[Int(v >> 12 & 63)])
            if n > 1 { out.append(alphabet[Int(v >> 6 & 63)]) } else if padding { out.append(UInt8(ascii: "=")) }
            if n > 2 { out.append(alphabet[Int(v & 63)]) } else if padding { out.append(UInt8(ascii: "=")) }
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes standard base64 (padding optional); nil on any other character.
    public static func decode(_ text: Substring) -> [UInt8]? {
        var out: [UInt8] = []
        var acc: UInt32 = 0
        var bits = 0
        for c in text.utf8 {
            if c == UInt8(ascii: "=") { break }
            guard let v = alphabet.firstIndex(of: c) else { return nil }
            acc = acc << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(acc >> UInt32(bits) & 0xff))
            }
        }
        return out
    }
}

/// OpenSSH's key fingerprints: SHA-256 (the shared `SHA2` core; the codec stays free of the crypto
/// library, and a fingerprint is no secret).
public enum SHA256 {
    public static func hash(_ message: [UInt8]) -> [UInt8] { SHA256Block.sha256(message) }

    /// OpenSSH's fingerprint of a key blob: `SHA256:` and the hash in unpadded base64.
    public static func fingerprint(blob: [UInt8]) -> String {
        "SHA256:" + Base64.encode(hash(blob), padding: false)
    }
}

/// The host a key blob belongs to, as `known_hosts` names it: the first plain name on a line with
/// that key; a hashed line (`|1|…`, Debian's default) names nobody, and then the key's fingerprint
/// stands for the host. `knownHosts` is the file's text.
public func hostName(forKey blob: [UInt8], knownHosts: String) -> String? {
    let wanted = Base64.encode(blob)
    for line in knownHosts.split(separator: "\n") {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 3, !fields[0].hasPrefix("#") else { continue }
        // An optional marker (@cert-authority, @revoked) first.
        let offset = fields[0].hasPrefix("@") ? 1 : 0
        guard fields.count >= offset + 3, fields[offset + 2] == wanted else { continue }
        if fields[0] == "@revoked" { continue }
        let names = fields[offset]
        if names.hasPrefix("|") { continue }
        if let first = names.split(separator: ",").first { return String(first) }
    }
    return nil
}
