// SPDX-License-Identifier: Apache-2.0
import Glibc

/// Unix sockets for tests: the `sockaddr_un` dance, once.
package enum UnixSocket {
    /// Calls `body` with `path` as a socket address; nil when the path does not fit (107 bytes).
    package static func withAddress<T>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    /// A stream socket connected to `path`, or nil (errno says why).
    package static func connect(_ path: String) -> Int32? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        guard withAddress(path, { Glibc.connect(fd, $0, $1) }) == 0 else {
            let saved = errno
            close(fd)
            errno = saved
            return nil
        }
        return fd
    }

    /// A socket of `type` (`SOCK_STREAM`, `SOCK_DGRAM`, with flags) bound to `path`, listening when
    /// it is a stream socket; nil (errno says why).
    package static func bind(_ path: String, type: Int32, backlog: Int32 = 256) -> Int32? {
        let fd = socket(AF_UNIX, type, 0)
        guard fd >= 0 else { return nil }
        let stream = type & 0xF == Int32(SOCK_STREAM.rawValue)
        guard withAddress(path, { Glibc.bind(fd, $0, $1) }) == 0, !stream || listen(fd, backlog) == 0 else {
            let saved = errno
            close(fd)
            errno = saved
            return nil
        }
        return fd
    }
}
