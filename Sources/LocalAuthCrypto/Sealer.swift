// SPDX-License-Identifier: Apache-2.0
import Crypto

/// The machine's data key and the one file format everything sealed at rest uses (ADR 0006).
///
///     "localauthd-sealed 1\n" nonce[12] ciphertext tag[16]
///
/// AES-256-GCM, a fresh random nonce per write, and the file's place in the state directory
/// (`users/alice/right-index-finger@virtual_device-0.print`) as additional authenticated data: a
/// sealed file copied to another name or another user does not open.
public struct Sealer: Sendable {
    /// The first line of every sealed file.
    public static let magic = Array("localauthd-sealed 1\n".utf8)
    public static let keySize = 32
    static let nonceSize = 12
    static let tagSize = 16

    private let key: SymmetricKey

    /// nil unless `bytes` is exactly 32 bytes.
    public init?(key bytes: [UInt8]) {
        guard bytes.count == Self.keySize else { return nil }
        key = SymmetricKey(data: bytes)
    }

    /// 32 bytes from the system's generator (BoringSSL's `RAND_bytes`: `getrandom`).
    public static func generateKey() -> [UInt8] {
        SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
    }

    /// True when `bytes` starts as a sealed file does (whether or not it opens).
    public static func isSealed(_ bytes: some Collection<UInt8>) -> Bool {
        bytes.starts(with: magic)
    }

    /// A value that names this key without revealing it: HMAC-SHA-256 of a fixed label. Stored
    /// beside the sealed files, it tells "another machine's key" apart from damaged files.
    public var checkValue: [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Array("localauthd sealing key check 1".utf8), using: key))
    }

    /// HMAC-SHA-256 under the key of `label`, a newline and `bytes`: a record kept beside the sealed
    /// files that only this key could have written (the sealing record's `mac=`, ADR 0006).
    public func authenticationCode(for bytes: [UInt8], label: String) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Array((label + "\n").utf8) + bytes, using: key))
    }

    /// True when `code` is `authenticationCode(for: bytes, label: label)` (compared in constant time).
    public func isAuthentic(_ code: [UInt8], for bytes: [UInt8], label: String) -> Bool {
        HMAC<SHA256>.isValidAuthenticationCode(code, authenticating: Array((label + "\n").utf8) + bytes, using: key)
    }

    public func seal(_ plaintext: [UInt8], context: String) -> [UInt8] {
        // A 12-byte random nonce cannot fail to make a box, so `combined` is always there.
        let box = try! AES.GCM.seal(plaintext, using: key, nonce: AES.GCM.Nonce(), authenticating: Array(context.utf8))
        return Self.magic + Array(box.combined!)
    }

    /// The plaintext, or nil when the bytes are not a sealed file, were sealed with another key or
    /// for another place, or were changed.
    public func open(_ sealed: [UInt8], context: String) -> [UInt8]? {
        guard Self.isSealed(sealed), sealed.count >= Self.magic.count + Self.nonceSize + Self.tagSize,
            let box = try? AES.GCM.SealedBox(combined: sealed[Self.magic.count...]),
            let plain = try? AES.GCM.open(box, using: key, authenticating: Array(context.utf8))
        else { return nil }
        return Array(plain)
    }
}
