// SPDX-License-Identifier: Apache-2.0

/// SHA-256's compression function and padding (FIPS 180-4, §5.1.1, §6.2.2), written once for the
/// two hashes this project computes itself: SHA-224 (`LocalAuthCrypto.SHA224`: swift-crypto has
/// none, and Apple's `SecKeyAlgorithm` names SHA-224 variants) and SHA-256 for OpenSSH's key
/// fingerprints (`SSHAgentProtocol`, which stays free of the crypto library). No branch or table
/// index depends on the data, so its time does not either.
public enum SHA256Block {
    /// SHA-256's initial value (§5.3.3).
    public static let sha256Initial: [UInt32] = [
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19,
    ]
    /// SHA-224's initial value (§5.3.2).
    public static let sha224Initial: [UInt32] = [
        0xc105_9ed8, 0x367c_d507, 0x3070_dd17, 0xf70e_5939, 0xffc0_0b31, 0x6858_1511, 0x64f9_8fa7, 0xbefa_4fa4,
    ]

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

    /// Folds one 64-byte block into `state`.
    public static func compress(_ state: inout [UInt32], _ block: ArraySlice<UInt8>) {
        func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { (x >> n) | (x << (32 - n)) }
        var w = [UInt32](repeating: 0, count: 64)
        let base = block.startIndex
        for t in 0..<16 {
            w[t] =
                UInt32(block[base + 4 * t]) << 24 | UInt32(block[base + 4 * t + 1]) << 16
                | UInt32(block[base + 4 * t + 2]) << 8 | UInt32(block[base + 4 * t + 3])
        }
        for t in 16..<64 {
            let s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3)
            let s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10)
            w[t] = w[t - 16] &+ s0 &+ w[t - 7] &+ s1
        }
        var (a, b, c, d, e, f, g, h) = (state[0], state[1], state[2], state[3], state[4], state[5], state[6], state[7])
        for t in 0..<64 {
            let t1 = h &+ (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) &+ ((e & f) ^ (~e & g)) &+ k[t] &+ w[t]
            let t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) &+ ((a & b) ^ (a & c) ^ (b & c))
            (h, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ t2)
        }
        for (i, v) in [a, b, c, d, e, f, g, h].enumerated() { state[i] = state[i] &+ v }
    }

    /// The last blocks of a message of `length` bytes whose unprocessed end is `tail` (< 64 bytes):
    /// the tail, 0x80, zeros, and the length in bits (§5.1.1).
    public static func padded(tail: [UInt8], length: UInt64) -> [UInt8] {
        let bits = length &* 8
        var out = tail + [0x80]
        while out.count % 64 != 56 { out.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) {
            out.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift)))
        }
        return out
    }

    /// The first `words` words of `state`, big-endian.
    public static func bytes(_ state: [UInt32], words: Int) -> [UInt8] {
        state.prefix(words).flatMap { word in
            [
                UInt8(word >> 24), UInt8(truncatingIfNeeded: word >> 16), UInt8(truncatingIfNeeded: word >> 8),
                UInt8(truncatingIfNeeded: word),
            ]
        }
    }

    /// SHA-256 of `message` in one call.
    public static func sha256(_ message: [UInt8]) -> [UInt8] {
        var state = sha256Initial
        let whole = message.count - message.count % 64
        for start in stride(from: 0, to: whole, by: 64) { compress(&state, message[start..<(start + 64)]) }
        let last = padded(tail: Array(message[whole...]), length: UInt64(message.count))
        for start in stride(from: 0, to: last.count, by: 64) { compress(&state, last[start..<(start + 64)]) }
        return bytes(state, words: 8)
    }
}
