// SPDX-License-Identifier: Apache-2.0
// WATCH on the socket (docs/protocol.md, "Watching the environment"): a connection that becomes a
// watch of its caller's own environment, for the `LAEnvironment` observers of a process.

import LocalAuthDaemon
import LocalAuthProtocol
import NIOCore
import Synchronization

extension Server.Limits {
    /// Watches one non-root uid may hold at once; they take none of its `connectionsPerUID`.
    static let watchesPerUID = 32
}

extension Connection {
    /// WATCH, from an idle connection: the connection leaves the request conversation for good and
    /// is handed to a `Watch`. Its place among the uid's connections is given back (a watch never
    /// stands in the way of the uid's authentication) for one among its watches; when those are
    /// full the connection ends with `ERROR tooManyConnections`.
    func startWatching(_ frame: Frame, context: ChannelHandlerContext) {
        guard let caller else { return fail(context, .malformed, "no peer credentials") }
        guard frame.fields.isEmpty else {
            // The caller's own account only: a watch names no user, nor anything else.
            return write(
                .result(RequestResult(.invalidRequest, Phrase.said("WATCH takes no fields"))), context: context)
        }
        guard counter.becomeWatch(uid: caller.accountUID, limit: Server.Limits.watchesPerUID) else {
            notice(
                "refused a watch from \(caller): too many watches", uid: caller.accountUID,
                kind: "watches refused (too many watches)", loop: context.eventLoop)
            return fail(context, .tooManyConnections, "too many watches from uid \(caller.accountUID)")
        }
        idleTimer?.cancel()
        idleTimer = nil
        state = .closed
        self.caller = nil  // its place is the watch's now: `channelInactive` here releases nothing
        let watch = Watch(daemon: daemon, counter: counter, caller: caller, reader: reader)
        let pipeline = context.pipeline.syncOperations
        do {
            try pipeline.addHandler(watch, position: .after(self))
            pipeline.removeHandler(context: context, promise: nil)
        } catch {
            counter.releaseWatch(uid: caller.accountUID)
            context.close(promise: nil)
        }
    }
}

/// One watch: an `environmentChanged` EVENT at once (the watch is in place: the client reads the
/// state after it, so no change falls between), then one each time the daemon says the caller's
/// environment may have changed. A CANCEL ends it with a RESULT; anything else with an ERROR.
///
/// A client that does not read is never waited for and never grows the daemon's memory: an EVENT
/// is written only when the socket takes it (a write buffer of one frame); changes meanwhile are
/// one pending EVENT, written when the socket drains. An EVENT says only that something may have
/// changed, so one stands for any number.
final class Watch: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let daemon: Daemon
    let counter: ConnectionCounter
    let caller: PeerCredentials
    var reader: FrameReader
    var id: UInt64?
    /// A change not yet written: the socket was full.
    var pending = false
    var closed = false
    /// A wake-up is on its way to the event loop: later changes ride on it.
    let due = WakeUp()

    final class WakeUp: Sendable {
        private let due = Atomic<Bool>(false)
        /// True when no wake-up was on its way (the caller sends one).
        func take() -> Bool { !due.exchange(true, ordering: .acquiringAndReleasing) }
        func arrived() { due.store(false, ordering: .releasing) }
    }

    init(daemon: Daemon, counter: ConnectionCounter, caller: PeerCredentials, reader: FrameReader) {
        self.daemon = daemon
        self.counter = counter
        self.caller = caller
        self.reader = reader
    }

    func handlerAdded(context: ChannelHandlerContext) {
        // Writable only while nothing waits in NIO's buffer: at most one EVENT beyond the kernel's.
        try? context.channel.syncOptions?.setOption(.writeBufferWaterMark, value: .init(low: 1, high: 1))
        let loop = context.eventLoop
        let bound = NIOLoopBound((self, context), eventLoop: loop)
        let due = self.due
        id = daemon.watchEnvironment(of: caller) {
            guard due.take() else { return }
            loop.execute {
                let (watch, context) = bound.value
                watch.changed(context: context)
            }
        }
        send(context)  // in place
        // Frames the client sent behind its WATCH, already read by the connection.
        process(context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closed else { return }
        reader.append(unwrapInboundIn(data).readableBytesView)
        process(context)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable && pending && !closed {
            pending = false
            send(context)
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        end()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { end() }

    private func end() {
        guard !closed else { return }
        closed = true
        if let id { daemon.stopWatchingEnvironment(id) }
        id = nil
        counter.releaseWatch(uid: caller.accountUID)
    }

    private func changed(context: ChannelHandlerContext) {
        due.arrived()
        guard !closed else { return }
        if context.channel.isWritable { send(context) } else { pending = true }
    }

    private func send(_ context: ChannelHandlerContext) {
        let phrase = Phrase.said("The environment may have changed")
        let bytes = ServerMessage.event(Event(.environmentChanged, phrase.english, phrase: phrase)).encodedForWire()
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes)), promise: nil)
    }

    private func process(_ context: ChannelHandlerContext) {
        do {
            while !closed, let frame = try reader.next() {
                switch frame.type {
                case .cancel:
                    finish(context, .result(RequestResult(.success, Phrase.said("Stopped watching"))))
                case let type:
                    throw type.isKnown ? ProtocolError.unexpectedMessage(type) : ProtocolError.unknownMessage(type)
                }
            }
        } catch let error as ProtocolError {
            finish(context, .error(code: error.code.rawValue, message: error.description))
        } catch {
            finish(context, .error(code: ProtocolErrorCode.malformed.rawValue, message: "\(error)"))
        }
    }

    /// The last frame, then the close; the watch ends at once.
    private func finish(_ context: ChannelHandlerContext, _ message: ServerMessage) {
        end()
        // A client that does not read gets no last frame and is not waited for.
        let reading = context.channel.isWritable
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: message.encodedForWire())))
            .assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        if !reading { context.close(promise: nil) }
    }
}
