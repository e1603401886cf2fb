// SPDX-License-Identifier: Apache-2.0
import LocalAuthProtocol

#if canImport(Glibc)
    import Glibc
#endif

extension DaemonConnection {
    /// REQUESTER (docs/protocol.md, "The requester"): the next request is made for the process of
    /// `pidfd` (an ssh agent's client), which the daemon reads itself and names in the prompt before
    /// this program. Sends REQUESTER, waits for DESCRIPTOR_WANTED, then one byte carrying the pidfd
    /// (`SCM_RIGHTS`). A refusal (the process exited, is another account's) is the daemon's ERROR.
    public func passRequester(pidfd: Int32, timeoutMs: Int64 = 5000) throws(ClientError) {
        try send(Frame(.requester))
        switch try receive(deadline: Self.now() + timeoutMs) {
        case .descriptorWanted: break
        case .error(let code, let message): throw .refused(code: code, message: message)
        // English: a protocol detail
        default: throw .protocolError("expected DESCRIPTOR_WANTED")
        }
        let headerSize = MemoryLayout<cmsghdr>.size
        var control = [UInt64](repeating: 0, count: (headerSize + 4 + 7) / 8)  // CMSG_SPACE(4), 8-aligned
        control.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: headerSize + 4, toByteOffset: 0, as: Int.self)  // cmsg_len = CMSG_LEN(4)
            raw.storeBytes(of: Int32(SOL_SOCKET), toByteOffset: 8, as: Int32.self)
            raw.storeBytes(of: Int32(SCM_RIGHTS), toByteOffset: 12, as: Int32.self)
            raw.storeBytes(of: pidfd, toByteOffset: headerSize, as: Int32.self)
        }
        var byte: UInt8 = 0
        let sent: Int = withUnsafeMutableBytes(of: &byte) { byteBuffer in
            control.withUnsafeMutableBytes { controlBuffer in
                var vector = iovec(iov_base: byteBuffer.baseAddress, iov_len: 1)
                return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                    var message = msghdr()
                    message.msg_iov = vectorPointer
                    message.msg_iovlen = 1
                    message.msg_control = controlBuffer.baseAddress
                    message.msg_controllen = controlBuffer.count
                    var n: Int
                    repeat { n = sendmsg(fd, &message, Int32(MSG_NOSIGNAL)) } while n < 0 && errno == EINTR
                    return n
                }
            }
        }
        guard sent == 1 else { throw .disconnected }
    }
}
