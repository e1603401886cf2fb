// SPDX-License-Identifier: Apache-2.0
// REQUESTER on the socket (docs/protocol.md, "The requester"): the one place the socket door reads
// a passed descriptor. SwiftNIO reads stream sockets with read(2), which drops SCM_RIGHTS (the kernel
// closes descriptors nobody takes), and has no recvmsg of its own for them. So the connection stops
// NIO's reading (autoRead off), asks for the byte, and takes it itself with recvmsg on the event
// loop, where NIO cannot close the socket meanwhile; then NIO reads on.

import DescriptorPassing
import LocalAuthDaemon
import LocalAuthProtocol
import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

extension Connection {
    /// How long the client has to send the byte after DESCRIPTOR_WANTED.
    static let descriptorWaitMs: Int64 = 2000

    /// REQUESTER: stop reading, find the socket's descriptor, then (once this read is over, so that
    /// NIO reads nothing more) say DESCRIPTOR_WANTED and take the byte.
    func awaitRequester(context: ChannelHandlerContext) {
        state = .awaitingDescriptor
        try? context.channel.syncOptions?.setOption(ChannelOptions.autoRead, value: false)
        guard let provider = context.channel as? SocketOptionProvider else {
            fail(context, .malformed, "the requester cannot be read on this connection")
            return
        }
        var cookie: UInt64?
        let asked: EventLoopFuture<UInt64> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(PassedDescriptor.soCookie))
        asked.assumeIsolated().whenSuccess { cookie = $0 }  // answered at once on the channel's loop
        // Searched once a connection (its number is NIO's until it closes): a client that repeats
        // REQUESTER does not make the loop walk the daemon's descriptors each time.
        guard let cookie, let fd = socketFD ?? PassedDescriptor.socket(cookie: cookie) else {
            fail(context, .malformed, "the requester cannot be read on this connection")
            return
        }
        socketFD = fd
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let (connection, context) = bound.value
            guard case .awaitingDescriptor = connection.state else { return }
            guard connection.reader.pendingByteCount == 0 else {
                connection.fail(context, .unexpectedMessage, "bytes after REQUESTER before DESCRIPTOR_WANTED")
                return
            }
            connection.write(.descriptorWanted, context: context)
            connection.takeDescriptor(
                fd: fd, context: context, deadline: NIODeadline.now() + .milliseconds(Self.descriptorWaitMs), wait: 1)
        }
    }

    /// One try at the byte (never blocking the loop); again after `wait` ms, doubling, until `deadline`.
    private func takeDescriptor(fd: Int32, context: ChannelHandlerContext, deadline: NIODeadline, wait: Int64) {
        guard case .awaitingDescriptor = state, let caller else { return }
        switch DescriptorPassing.receive(fd, room: PassedDescriptor.room) {
        case .nothingYet:
            guard NIODeadline.now() < deadline else {
                fail(
                    context, .timeout,
                    "no descriptor came within \(Self.descriptorWaitMs / 1000) s of DESCRIPTOR_WANTED")
                return
            }
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: .milliseconds(wait)) {
                let (connection, context) = bound.value
                connection.takeDescriptor(fd: fd, context: context, deadline: deadline, wait: min(wait * 2, 50))
            }
        case .closed:
            context.close(promise: nil)
        case .descriptors(let fds, let truncated):
            guard fds.count == 1, !truncated else {
                for received in fds { close(received) }
                fail(
                    context, .malformed,
                    fds.isEmpty && !truncated ? "no descriptor with the byte" : "more than one descriptor")
                return
            }
            switch PeerProcess.requester(pidfd: fds[0], callerUID: caller.uid) {
            case .failure(let refusal):
                fail(context, .malformed, refusal.message)
            case .success(let process):
                requester = process
                state = .idle
                try? context.channel.syncOptions?.setOption(ChannelOptions.autoRead, value: true)
                armIdleTimer(context)
            }
        }
    }
}

/// The room for the byte's descriptors, and the search for the connection's socket.
enum PassedDescriptor {
    /// `SO_COOKIE` (`<asm-generic/socket.h>`): a number the kernel gives each socket, never reused.
    static let soCookie: Int32 = 57
    /// Room for this many descriptors; more is `truncated` (the kernel closes the ones left out).
    static let room = 4

    /// The daemon's descriptor of the socket whose `SO_COOKIE` is `cookie` (`/proc/self/fd`). NIO
    /// does not give its descriptors away; the cookie names the socket, and while the loop runs this
    /// NIO cannot close it, so the number stays that socket's.
    static func socket(cookie: UInt64) -> Int32? {
        guard let dir = opendir("/proc/self/fd") else { return nil }
        defer { closedir(dir) }
        let own = dirfd(dir)
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let fd = Int32(name), fd != own else { continue }
            var st = stat()
            guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFSOCK else { continue }
            var value: UInt64 = 0
            var size = socklen_t(MemoryLayout<UInt64>.size)
            if getsockopt(fd, SOL_SOCKET, soCookie, &value, &size) == 0 && value == cookie { return fd }
        }
        return nil
    }
}
