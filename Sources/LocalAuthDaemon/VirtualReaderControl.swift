// SPDX-License-Identifier: Apache-2.0

import Glibc

/// Talks to libfprint's `virtual_device` driver through its control socket.
///
/// One command per connection, no trailing newline, then `shutdown(SHUT_WR)`; EOF from the
/// driver means the command was consumed, so commands are never sent back to back unawaited.
public struct VirtualReaderControl: Sendable {
    public let socketPath: String

    public init(socketPath: String) { self.socketPath = socketPath }

    public enum Failure: Error, Equatable { case unreachable(Int32), timedOut }

    /// Sends `command` and waits (at most `timeoutMs`) until the driver has consumed it.
    public func send(_ command: String, timeoutMs: Int32 = 5000) throws(Failure) -> String {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .unreachable(errno) }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array(socketPath.utf8)
        guard path.count < MemoryLayout.size(ofValue: address.sun_path) else { throw .unreachable(ENAMETOOLONG) }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path) }
        let ok = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard ok == 0 else { throw .unreachable(errno) }
        let bytes = Array(command.utf8)
        guard bytes.withUnsafeBytes({ Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count
        else {
            throw .unreachable(errno)
        }
        shutdown(fd, Int32(SHUT_WR))
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 512)
        while true {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, timeoutMs)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { throw .timedOut }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            reply.append(contentsOf: buffer[0..<n])
        }
        return String(decoding: reply, as: UTF8.self)
    }
}
