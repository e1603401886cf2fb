// SPDX-License-Identifier: Apache-2.0

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

/// SHA-256 (FIPS 180-4), for OpenSSH's key fingerprints (`SHA256:` and unpadded base64). The
/// codec stays free of the crypto library; a fingerprint is no secret and needs no constant time.
public enum SHA256 {
    private static let k: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

    public static func hash(_ message: [UInt8]) -> [UInt8] {
        var h: [UInt32] = [
            0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19,
        ]
        var data = message
        let bitLength = UInt64(message.count) * 8
        data.append(0x80)
        while data.count % 64 != 56 { data.append(0) }
        for i in (0..<8).reversed() { data.append(UInt8(bitLength >> (UInt64(i) * 8) & 0xff)) }
        var w = [UInt32](repeating: 0, count: 64)
        for chunk in stride(from: 0, to: data.count, by: 64) {
            for i in 0..<16 {
                let j = chunk + i * 4
                w[i] =
                    UInt32(data[j]) << 24 | UInt32(data[j + 1]) << 16 | UInt32(data[j + 2]) << 8 | UInt32(data[j + 3])
            }
            for i in 16..<64 {
                let s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3)
                let s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10)
                w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
            }
            var (a, b, c, d, e, f, g, hh) = (h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7])
            for i in 0..<64 {
                let s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)
                let ch = (e & f) ^ (~e & g)
                let t1 = hh &+ s1 &+ ch &+ k[i] &+ w[i]
                let s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)
                let maj = (a & b) ^ (a & c) ^ (b & c)
                let t2 = s0 &+ maj
                (hh, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ t2)
            }
            h[0] = h[0] &+ a
            h[1] = h[1] &+ b
            h[2] = h[2] &+ c
            h[3] = h[3] &+ d
            h[4] = h[4] &+ e
            h[5] = h[5] &+ f
            h[6] = h[6] &+ g
            h[7] = h[7] &+ hh
        }
        return h.flatMap { [UInt8($0 >> 24), UInt8($0 >> 16 & 0xff), UInt8($0 >> 8 & 0xff), UInt8($0 & 0xff)] }
    }

    private static func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { x >> n | x << (32 - n) }

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
