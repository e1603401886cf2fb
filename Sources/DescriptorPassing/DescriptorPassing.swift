// SPDX-License-Identifier: Apache-2.0
// REQUESTER's byte (docs/protocol.md, "The requester"): one byte over a Unix stream socket that
// carries a descriptor (SCM_RIGHTS). The client sends it (LocalAuthClient), the socket door takes
// it (LocalAuthSocketDoor); both ends of the exchange are written here, once.

#if canImport(Glibc)
    import Glibc
#endif

public enum DescriptorPassing {
    public enum Received: Sendable {
        case nothingYet
        case closed
        /// Descriptors received with the byte (close-on-exec); `truncated`: more came than fit.
        case descriptors([Int32], truncated: Bool)
    }

    /// Sends one byte carrying `descriptor` over `fd` (retrying on EINTR); whether the byte went.
    public static func send(_ descriptor: Int32, over fd: Int32) -> Bool {
        let headerSize = MemoryLayout<cmsghdr>.size
        var control = [UInt64](repeating: 0, count: (headerSize + 4 + 7) / 8)  // CMSG_SPACE(4), 8-aligned
        control.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: headerSize + 4, toByteOffset: 0, as: Int.self)  // cmsg_len = CMSG_LEN(4)
            raw.storeBytes(of: Int32(SOL_SOCKET), toByteOffset: 8, as: Int32.self)
            raw.storeBytes(of: Int32(SCM_RIGHTS), toByteOffset: 12, as: Int32.self)
            raw.storeBytes(of: descriptor, toByteOffset: headerSize, as: Int32.self)
        }
        let sent: Int = withOneByteMessage(control: &control) { message in
            var n: Int
            repeat { n = sendmsg(fd, &message, Int32(MSG_NOSIGNAL)) } while n < 0 && errno == EINTR
            return n
        }
        return sent == 1
    }

    /// One `recvmsg` of one byte from `fd`, without waiting, its `SCM_RIGHTS` taken close-on-exec;
    /// room for `room` descriptors (more is `truncated`: the kernel closes the ones left out).
    public static func receive(_ fd: Int32, room: Int) -> Received {
        let headerSize = MemoryLayout<cmsghdr>.size
        var control = [UInt64](repeating: 0, count: (headerSize + room * 4 + 7) / 8)  // 8-aligned
        let (n, controlLength, flags): (Int, Int, Int32) = withOneByteMessage(control: &control) { message in
            var got: Int
            repeat {
                got = recvmsg(fd, &message, Int32(MSG_DONTWAIT) | Int32(MSG_CMSG_CLOEXEC))
            } while got < 0 && errno == EINTR
            return (got, Int(message.msg_controllen), message.msg_flags)
        }
        if n < 0 { return errno == EAGAIN || errno == EWOULDBLOCK ? .nothingYet : .closed }
        if n == 0 { return .closed }
        var fds: [Int32] = []
        control.withUnsafeBytes { raw in
            var offset = 0
            while offset + headerSize <= controlLength {
                let length = Int(raw.load(fromByteOffset: offset, as: Int.self))  // cmsg_len
                let level = raw.load(fromByteOffset: offset + 8, as: Int32.self)
                let type = raw.load(fromByteOffset: offset + 12, as: Int32.self)
                guard length >= headerSize, offset + length <= controlLength else { break }
                if level == SOL_SOCKET && type == Int32(SCM_RIGHTS) {
                    var at = offset + headerSize
                    while at + 4 <= offset + length {
                        fds.append(raw.load(fromByteOffset: at, as: Int32.self))
                        at += 4
                    }
                }
                offset += (length + 7) & ~7
            }
        }
        return .descriptors(fds, truncated: flags & Int32(MSG_CTRUNC) != 0)
    }

    /// `body` with a `msghdr` whose one vector is `data` and whose ancillary buffer is `control`
    /// (for `sendmsg` / `recvmsg`; the journal's tests read datagrams with it too).
    public static func withMessage<Result>(
        data: UnsafeMutableRawBufferPointer, control: UnsafeMutableRawBufferPointer, _ body: (inout msghdr) -> Result
    ) -> Result {
        var vector = iovec(iov_base: data.baseAddress, iov_len: data.count)
        return withUnsafeMutablePointer(to: &vector) { vectorPointer in
            var message = msghdr()
            message.msg_iov = vectorPointer
            message.msg_iovlen = 1
            message.msg_control = control.baseAddress
            message.msg_controllen = control.count
            return body(&message)
        }
    }

    /// `body` with a `msghdr` for one byte and the ancillary buffer `control`.
    private static func withOneByteMessage<Result>(
        control: inout [UInt64], _ body: (inout msghdr) -> Result
    ) -> Result {
        var byte: UInt8 = 0
        return withUnsafeMutableBytes(of: &byte) { byteBuffer in
            control.withUnsafeMutableBytes { controlBuffer in
                withMessage(data: byteBuffer, control: controlBuffer, body)
            }
        }
    }
}
