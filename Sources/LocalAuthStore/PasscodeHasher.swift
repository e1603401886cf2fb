// SPDX-License-Identifier: Apache-2.0
import CCrypt
import Glibc

/// Why a passcode could not be hashed. Never carries the passcode.
public enum PasscodeError: Error, Equatable, Sendable {
    /// Fewer than 4 or more than 256 UTF-8 bytes, or a NUL byte.
    case invalidPasscode(String)
    /// libxcrypt refused (`crypt_gensalt_rn` returned NULL or `crypt_r` returned a `*` failure token).
    case hashingFailed(errno: Int32)
}

/// Passcode hashes as `/etc/shadow` keeps them: yescrypt through libxcrypt, salted, slow.
public enum PasscodeHasher {
    /// The smallest and largest passcode, in UTF-8 bytes.
    public static let allowedLength = 4...256

    /// Checks the passcode rules without hashing; nil when the passcode is acceptable.
    public static func problem(with passcode: String) -> String? {
        let count = passcode.utf8.count
        if !allowedLength.contains(count) {
            return "a passcode must be \(allowedLength.lowerBound) to \(allowedLength.upperBound) bytes long"
        }
        if passcode.utf8.contains(0) { return "a passcode must not contain a NUL character" }
        return nil
    }

    /// A fresh yescrypt hash (`$y$…`): `crypt_gensalt_rn("$y$", 0, NULL, 0)` draws the salt from the
    /// OS at libxcrypt's default cost, then `crypt_r` hashes.
    public static func hash(_ passcode: String) throws(PasscodeError) -> String {
        if let problem = problem(with: passcode) { throw .invalidPasscode(problem) }
        var setting = [CChar](repeating: 0, count: Int(CRYPT_GENSALT_OUTPUT_SIZE))
        errno = 0
        let made = setting.withUnsafeMutableBufferPointer { buffer in
            crypt_gensalt_rn("$y$", 0, nil, 0, buffer.baseAddress, Int32(buffer.count))
        }
        guard made != nil else { throw .hashingFailed(errno: errno) }
        let settingText = setting.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        guard let hash = cryptOutput(passcode, setting: settingText), hash.hasPrefix("$y$") else {
            throw .hashingFailed(errno: errno)
        }
        return hash
    }

    /// True when `passcode` hashes to `hash` under the hash's own setting. The comparison takes the
    /// same time wherever the first difference is. Anything but a yescrypt hash is refused, so a
    /// tampered record cannot downgrade to DES crypt.
    public static func verify(_ passcode: String, hash: String) -> Bool {
        guard problem(with: passcode) == nil, isYescryptHash(hash), let attempt = cryptOutput(passcode, setting: hash)
        else { return false }
        return constantTimeEqual(Array(attempt.utf8), Array(hash.utf8))
    }

    /// The `crypt_r` output of an attempt under the stored hash's setting: equal for equal attempts,
    /// different otherwise, so the policy can count "the same wrong passcode twice" once without
    /// keeping the plaintext. Equals `hash` exactly when `verify` is true. When the attempt or the
    /// hash is unusable the token is `"*"`, which no real hash equals.
    public static func attemptToken(_ passcode: String, hash: String) -> String {
        guard problem(with: passcode) == nil, isYescryptHash(hash), let attempt = cryptOutput(passcode, setting: hash)
        else { return "*" }
        return attempt
    }

    /// True when an attempt token (`attemptToken`) is the hash itself: the passcode was right. Compares
    /// in constant time, so one `crypt_r` gives both the verdict and the token.
    public static func matches(token: String, hash: String) -> Bool {
        token != "*" && constantTimeEqual(Array(token.utf8), Array(hash.utf8))
    }

    /// `verify` on a detached task: yescrypt takes ~20 ms, which must not hold the caller's executor.
    public static func checkOffTheActor(_ passcode: String, hash: String) async -> Bool {
        await Task.detached { verify(passcode, hash: hash) }.value
    }

    /// `$y$`, then only crypt(5) characters.
    static func isYescryptHash(_ text: String) -> Bool {
        text.hasPrefix("$y$") && text.utf8.count > 3 && StateRecord.isCryptText(text)
    }

    /// `crypt_r` with a heap `crypt_data` (32 KiB: too big for a thread's stack to be polite),
    /// zeroed before use as libxcrypt asks and with `explicit_bzero` after, since it held the passcode.
    /// nil when libxcrypt answers with a `*` failure token or NULL.
    private static func cryptOutput(_ passcode: String, setting: String) -> String? {
        let data = UnsafeMutableRawPointer.allocate(
            byteCount: MemoryLayout<crypt_data>.size, alignment: MemoryLayout<crypt_data>.alignment)
        memset(data, 0, MemoryLayout<crypt_data>.size)
        defer {
            explicit_bzero(data, MemoryLayout<crypt_data>.size)
            data.deallocate()
        }
        let typed = data.bindMemory(to: crypt_data.self, capacity: 1)
        errno = 0
        guard let output = crypt_r(passcode, setting, typed) else { return nil }
        let text = String(cString: output)
        // An invalid setting yields "*0" or "*1", never a hash: treat as failure.
        guard !text.isEmpty, !text.hasPrefix("*") else { return nil }
        return text
    }

    /// Compares every byte whatever the first difference, so timing does not reveal a prefix.
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
