// SPDX-License-Identifier: Apache-2.0
import LocalAuthCrypto
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Apple's authorization of a persisted right, held for the process that obtained it: after a
/// RIGHT_USE `authorize` succeeds, the same process's key operations on that right run without
/// another evaluation, until it sends RIGHT_USE `deauthorize`, the process ends, the right is
/// removed or replaced, or the daemon restarts (nothing here is written down). On Apple's systems
/// the authorization lives in the app's `LARight` object; here the process is the holder: the
/// daemon cannot see objects, and another process — of the same account too — never shares it.
///
/// A process is its pid and its start time (`/proc/<pid>/stat`, field 22): a pid reused by a later
/// process does not inherit the grant. Unreadable start time: no grant (every use evaluates).
final class RightGrants: Sendable {
    /// Grants kept at most (every account together); the oldest goes first.
    static let capacity = 1024

    struct Holder: Hashable, Sendable {
        let user: String
        let identifier: String
        let pid: Int32
        let startTime: UInt64
    }

    private struct Grant {
        /// Which right: a digest of its private key, so a right saved again under the same
        /// identifier is another right.
        let right: [UInt8]
        let grantedMs: Int64
    }

    private let grants = Mutex<[Holder: Grant]>([:])

    /// The holder for `pid` now; nil when its start time cannot be read.
    static func holder(user: String, identifier: String, pid: Int32) -> Holder? {
        guard pid > 0, let start = startTime(pid: pid) else { return nil }
        return Holder(user: user, identifier: identifier, pid: pid, startTime: start)
    }

    /// Records an authorization of `privateKey`'s right for `holder`.
    func grant(_ holder: Holder, privateKey: [UInt8], nowMs: Int64) {
        let right = Digests.sha256(privateKey)
        grants.withLock { grants in
            grants[holder] = Grant(right: right, grantedMs: nowMs)
            if grants.count > Self.capacity {
                grants = grants.filter { Self.startTime(pid: $0.key.pid) == $0.key.startTime }
                while grants.count > Self.capacity,
                    let oldest = grants.min(by: { $0.value.grantedMs < $1.value.grantedMs })
                {
                    grants.removeValue(forKey: oldest.key)
                }
            }
        }
    }

    /// Whether `holder` holds an authorization of the right whose key is `privateKey`.
    func holds(_ holder: Holder, privateKey: [UInt8]) -> Bool {
        let right = Digests.sha256(privateKey)
        return grants.withLock { $0[holder]?.right == right }
    }

    /// Drops `holder`'s authorization (deauthorize, or a refused authorize).
    func revoke(_ holder: Holder) {
        _ = grants.withLock { $0.removeValue(forKey: holder) }
    }

    /// Field 22 of `/proc/<pid>/stat`: when the process started, in clock ticks since boot.
    static func startTime(pid: Int32) -> UInt64? {
        let fd = open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        return parseStartTime(stat: String(decoding: buffer[..<n], as: UTF8.self))
    }

    /// The start time of a `stat` line; the command (field 2) may hold spaces and parentheses.
    static func parseStartTime(stat: String) -> UInt64? {
        guard let close = stat.lastIndex(of: ")") else { return nil }
        // After ")": field 3 (state) is the first; field 22 is the 20th.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 19 else { return nil }
        return UInt64(fields[19])
    }
}
