// SPDX-License-Identifier: Apache-2.0
import Crypto
import SHA2

/// SHA-224 (FIPS 180-4, §6.3): SHA-256's compression with its own initial value, cut to 28 bytes.
/// swift-crypto has no SHA-224, and Apple's `SecKeyAlgorithm` names SHA-224 variants of every P-256
/// algorithm (`ecdsaSignatureMessageX962SHA224`, `ecdhKeyExchangeStandardX963SHA224`, …). A
/// `HashFunction`, so swift-crypto's X9.63 KDF runs over it. Checked against FIPS 180-4's examples.
public struct SHA224: HashFunction {
    public static let blockByteCount = 64

    private var state = SHA256Block.sha224Initial
    private var pending: [UInt8] = []
    private var length: UInt64 = 0

    public init() {}

    public mutating func update(bufferPointer: UnsafeRawBufferPointer) {
        length &+= UInt64(bufferPointer.count)
        pending.append(contentsOf: bufferPointer)
        var start = 0
        while pending.count - start >= 64 {
            SHA256Block.compress(&state, pending[start..<(start + 64)])
            start += 64
        }
        pending.removeFirst(start)
    }

    public func finalize() -> SHA224Digest {
        var state = self.state
        let tail = SHA256Block.padded(tail: pending, length: length)
        for block in stride(from: 0, to: tail.count, by: 64) {
            SHA256Block.compress(&state, tail[block..<(block + 64)])
        }
        return SHA224Digest(bytes: SHA256Block.bytes(state, words: 7))
    }
}

/// A SHA-224 digest (28 bytes).
public struct SHA224Digest: Digest {
    public static let byteCount = 28
    let bytes: [UInt8]

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes(body)
    }
    public func makeIterator() -> IndexingIterator<[UInt8]> { bytes.makeIterator() }
    public var description: String { "SHA224 digest: " + bytes.map { String($0, radix: 16) }.joined() }
}

/// A digest a caller computed (Apple's `ecdsaSignatureDigestX962SHA…` sign what they are given): its
/// bytes, as swift-crypto's ECDSA signs and verifies a `Digest`.
struct GivenDigest: Digest {
    static var byteCount: Int { 0 }  // not read by swift-crypto's ECDSA, which signs the bytes given
    let bytes: [UInt8]

    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes(body)
    }
    func makeIterator() -> IndexingIterator<[UInt8]> { bytes.makeIterator() }
    var description: String { "digest of \(bytes.count) bytes" }
}
