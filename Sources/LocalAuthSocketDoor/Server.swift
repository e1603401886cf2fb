// SPDX-License-Identifier: Apache-2.0
import LocalAuthDaemon
import LocalAuthDoorLimits
import LocalAuthProtocol
import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The Unix socket: one `Connection` per client, the daemon behind them all.
public final class Server: Sendable {
    public struct Limits: Sendable {
        /// Connections one non-root uid may hold at once.
        public var connectionsPerUID = 32
        /// Connections in all.
        public var connections = 4096
        /// A connection with no request running is closed after this.
        public var idleTimeoutMs: Int64 = 30_000
        /// Requests one non-root uid may have running at once; its others wait their turn, so a
        /// flood queues behind itself and never deep in front of root's `pam_authenticate`.
        public var requestsPerUID = 4
        /// Requests one non-root uid may start per second, after a burst of `requestBurst`:
        /// a flood cannot take the daemon's CPU from everyone else (no person needs more).
        public var requestsPerSecondPerUID = 100
        public var requestBurst = 50
        public init() {}
    }

    let daemon: Daemon
    let group: MultiThreadedEventLoopGroup
    public let limits: Limits
    let counter: ConnectionCounter
    /// The per-uid request turns, shared with the fprintd door (`FprintdGate`).
    public let gate: RequestGate
    let audit: AuditLog
    /// The throttle of the lines a client causes, shared with the fprintd door.
    public let throttle: NoticeThrottle
    let channel: any Channel

    /// Binds `socketPath` (mode 0666: every peer is authorised by its credentials), or adopts
    /// `adoptedFD` from systemd.
    public init(daemon: Daemon, socketPath: String, adoptedFD: Int32?, limits: Limits = Limits(), audit: AuditLog)
        async throws
    {
        self.daemon = daemon
        self.limits = limits
        self.audit = audit
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        self.group = group
        let counter = ConnectionCounter()
        self.counter = counter
        let gate = RequestGate(
            limit: limits.requestsPerUID, perSecond: limits.requestsPerSecondPerUID, burst: limits.requestBurst)
        self.gate = gate
        let throttle = NoticeThrottle()
        self.throttle = throttle
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        Connection(
                            daemon: daemon, limits: limits, counter: counter, gate: gate, audit: audit,
                            throttle: throttle))
                }
            }
        if let adoptedFD {
            channel = try await bootstrap.withBoundSocket(adoptedFD).get()
        } else {
            channel = try await bootstrap.bind(unixDomainSocketPath: socketPath, cleanupExistingSocketFile: true).get()
            // Never through a symbolic link someone put in the socket's place after the bind.
            fchmodat(AT_FDCWD, socketPath, 0o666, AT_SYMLINK_NOFOLLOW)
        }
    }

    /// Connections accepted and not yet closed (for idle exit and `systemctl status`).
    public var openConnections: Int { counter.total }

    /// Open connections now, and connections accepted since start.
    public var connectionCounts: (open: Int, accepted: Int) { counter.openAndAccepted }

    /// Returns when at least `burst` connections came after the `since`-th accepted and at most
    /// `openAtMost` are still open (the close that ends a burst of connections), with the number
    /// accepted then; nil when cancelled.
    public func quietAfterBurst(since: Int, burst: Int, openAtMost: Int) async -> Int? {
        await counter.quietAfterBurst(since: since, burst: burst, openAtMost: openAtMost)
    }

    /// Since when no connection has been open: at once when none is, else at the close that leaves
    /// none open; nil when cancelled. It waits on that close, never on a timer.
    public func idleSince() async -> ContinuousClock.Instant? {
        await counter.idleSince()
    }

    /// Since when no connection has been open, now; nil while one is.
    public var idleSinceNow: ContinuousClock.Instant? { counter.idleSinceNow }

    /// Waits, at most `limit`, until every request started has had its RESULT written: on the way
    /// out, after the daemon ended its evaluations as `systemCancel`, so that a client is told that
    /// rather than finding its connection closed (issue 25).
    public func drain(within limit: Duration) async {
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        while counter.requestsInFlight > 0 && clock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
    }

    /// Stops accepting, closes every connection (their requests end as systemCancel).
    public func shutdown() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
    }

    /// Completes when the listening socket closes.
    public func waitUntilClosed() async {
        try? await channel.closeFuture.get()
    }

    /// True once the event loop has run a task of ours: it answers (the watchdog's proof).
    public func eventLoopAnswers() async -> Bool {
        (try? await channel.eventLoop.submit({}).get()) != nil
    }

    /// Stops accepting (systemd keeps the socket and its backlog) and returns once every connection
    /// accepted has been served: one accepted just before the close is counted only once its
    /// registration, queued on the event loop before our hops, has run.
    public func stopAcceptingAndServeTheAccepted() async {
        try? await channel.close()
        for _ in 0..<3 { try? await channel.eventLoop.submit {}.get() }
        // A watch accepted meanwhile is not waited for (it would hold the stop while its client
        // lives); it closes with the daemon and its client connects again (Watch.swift).
        while counter.servingTotal > 0 { try? await Task.sleep(for: .milliseconds(20)) }
    }
}

/// One client: HELLO first, then requests one at a time; bad bytes get one ERROR and a close.
final class Connection: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    enum State {
        case awaitingHello
        case idle
        case busy(Task<Void, Never>, ClientSignals)
        /// After REQUESTER: no frame is read until the byte carrying the pidfd (`RequesterDescriptor.swift`).
        case awaitingDescriptor
        case closed
    }

    let daemon: Daemon
    let limits: Server.Limits
    let counter: ConnectionCounter
    let gate: RequestGate
    let audit: AuditLog
    let throttle: NoticeThrottle
    var state = State.awaitingHello
    var reader = FrameReader()
    var caller: PeerCredentials?
    var idleTimer: Scheduled<Void>?
    /// The process the next request is made for (REQUESTER); nil: the caller's own.
    var requester: PeerProcess?
    /// This connection's socket descriptor, once a REQUESTER had it found (`RequesterDescriptor.swift`).
    var socketFD: Int32?

    init(
        daemon: Daemon, limits: Server.Limits, counter: ConnectionCounter, gate: RequestGate, audit: AuditLog,
        throttle: NoticeThrottle
    ) {
        self.daemon = daemon
        self.limits = limits
        self.counter = counter
        self.gate = gate
        self.audit = audit
        self.throttle = throttle
    }

    func channelActive(context: ChannelHandlerContext) {
        guard let credentials = Self.peerCredentials(context.channel) else {
            fail(context, .malformed, "cannot read the peer's credentials")
            return
        }
        guard counter.acquire(uid: credentials.accountUID, limits: limits) else {
            notice(
                "refused a connection from \(credentials): too many connections", uid: credentials.accountUID,
                kind: "connections refused (too many connections)", loop: context.eventLoop)
            caller = nil
            fail(context, .tooManyConnections, "too many connections from uid \(credentials.accountUID)")
            return
        }
        caller = credentials
        armIdleTimer(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if case .busy(let task, let signals) = state {
            signals.finish()
            task.cancel()  // the request ends as systemCancel; the reader is freed
        }
        state = .closed
        requester = nil
        idleTimer?.cancel()
        if let caller { counter.release(uid: caller.accountUID) }
        caller = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case let buffer = unwrapInboundIn(data), !isClosed else { return }
        reader.append(buffer.readableBytesView)
        do {
            while let frame = try reader.next() {
                try dispatch(frame, context: context)
                if isClosed { return }
            }
        } catch let error as ProtocolError {
            fail(context, error.code, error.description)
        } catch {
            fail(context, .malformed, "\(error)")
        }
    }

    var isClosed: Bool { if case .closed = state { true } else { false } }

    private func dispatch(_ frame: Frame, context: ChannelHandlerContext) throws {
        switch state {
        case .closed: return
        case .awaitingHello:
            let hello = try Hello(frame: frame)
            guard hello.version >= 1 else { throw ProtocolError.unsupportedVersion(hello.version) }
            write(.welcome(version: min(hello.version, Wire.version), server: "localauthd 0.1"), context: context)
            state = .idle
        case .busy(_, let signals):
            switch frame.type {
            case .cancel: signals.offer(.cancel)
            case .fallback: signals.offer(.fallback)
            case .passcode:
                guard let passcode = frame.string(.passcode), passcode.utf8.count <= 256 else {
                    throw ProtocolError.malformed("PASSCODE without a passcode of at most 256 bytes")
                }
                // One per passcodeNeeded; any other is refused and not kept (issue 13, H3).
                signals.offer(.passcode(passcode))
            default:
                throw frame.type.isKnown
                    ? ProtocolError.unexpectedMessage(frame.type) : ProtocolError.unknownMessage(frame.type)
            }
        case .awaitingDescriptor:
            // The client sent on without waiting for DESCRIPTOR_WANTED.
            throw ProtocolError.unexpectedMessage(frame.type)
        case .idle:
            if frame.type == .watch { return startWatching(frame, context: context) }  // Watch.swift
            if frame.type == .requester { return awaitRequester(context: context) }  // RequesterDescriptor.swift
            guard frame.type.isKnown else { throw ProtocolError.unknownMessage(frame.type) }
            let request: Request
            do {
                request = try Request(frame: frame)
            } catch .notARequest(let type) {
                throw ProtocolError.unexpectedMessage(type)
            } catch {
                // English: a client's programming error, named by the protocol's terms
                write(.result(RequestResult(.invalidRequest, "Invalid request: \(error)")), context: context)
                return
            }
            start(request, context: context)
        }
    }

    private func start(_ request: Request, context: ChannelHandlerContext) {
        guard var named = caller else {
            fail(context, .malformed, "no peer credentials")
            return
        }
        named.requester = requester  // for this one request
        requester = nil
        let caller = named
        idleTimer?.cancel()
        let signals = ClientSignals()
        let channel = context.channel
        let loop = context.eventLoop
        let send: @Sendable (Event) -> Void = { event in
            let bytes = ServerMessage.event(event).encodedForWire()
            channel.writeAndFlush(channel.allocator.buffer(bytes: bytes), promise: nil)
        }
        let daemon = self.daemon
        let gate = self.gate
        let counter = self.counter
        let bound = NIOLoopBound((self, context), eventLoop: loop)
        counter.requestStarted()
        // What the daemon does once the answer is out runs after the RESULT's write, on this loop.
        let answered = Mutex<(@Sendable () -> Void)?>(nil)
        let io = RequestIO(send: send, signals: signals, whenAnswered: { work in answered.withLock { $0 = work } })
        let task = Task(priority: Self.priority(of: request)) {
            // Cancelled while waiting: the connection is gone and nobody reads the answer.
            guard await gate.enter(uid: caller.accountUID) else {
                counter.requestEnded()
                return
            }
            let result = await daemon.handle(request, caller: caller, io: io).result
            gate.leave(uid: caller.accountUID)
            loop.execute {
                let (connection, context) = bound.value
                connection.finish(result, context: context)
                counter.requestEnded()
                answered.withLock { $0 }?()
            }
        }
        state = .busy(task, signals)
    }

    /// A person is waiting at the reader or the prompt for these (`passwordUsed`: a login that goes
    /// on once it is recorded): their tasks, and the reader's events they await, run before queued
    /// questions (`status`, `list`, `canEvaluate` …) on the cooperative pool and on the daemon
    /// actor, whose queues run the higher priority first. A
    /// burst of status traffic from other processes then never stands between a scan and its
    /// answer (docs/performance.md, figure 8). `simulate` stands for the reader's own events.
    /// The others keep the default priority, not a lower one: libdispatch may run lower classes on
    /// threads the kernel schedules after everything else on a busy machine.
    static func priority(of request: Request) -> TaskPriority {
        switch request {
        case .evaluate, .enroll, .rightUse, .simulate, .passcodeSet, .passcodeRemove, .passwordUsed: .high
        case .status, .canEvaluate, .list, .delete, .devices, .lockoutReset, .rightSave, .rightGet, .rightRemove,
            .importFprintd:
            .medium
        }
    }

    /// The request's RESULT; the connection takes the next request.
    private func finish(_ result: RequestResult, context: ChannelHandlerContext) {
        guard case .busy = state else { return }
        state = .idle
        write(.result(result), context: context)
        armIdleTimer(context)
    }

    func armIdleTimer(_ context: ChannelHandlerContext) {
        idleTimer?.cancel()
        idleTimer = context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(limits.idleTimeoutMs)) {
            [weak self] in
            guard let self, !self.isClosed else { return }
            if case .busy = self.state { return }
            self.fail(context, .timeout, "no request for \(self.limits.idleTimeoutMs / 1000) s")
        }
    }

    func write(_ message: ServerMessage, context: ChannelHandlerContext) {
        write(message, channel: context.channel)
    }

    private func write(_ message: ServerMessage, channel: any Channel) {
        channel.writeAndFlush(channel.allocator.buffer(bytes: message.encodedForWire()), promise: nil)
    }

    /// One ERROR frame, then the connection closes; the daemon serves on.
    func fail(_ context: ChannelHandlerContext, _ code: ProtocolErrorCode, _ message: String) {
        guard !isClosed else { return }
        if case .busy(let task, let signals) = state {
            signals.finish()
            task.cancel()
        }
        state = .closed
        if let caller {
            notice(
                "closing connection of \(caller): \(message)", uid: caller.accountUID,
                kind: "connections closed (bad frames or idle)", loop: context.eventLoop)
        }
        let frame = ServerMessage.error(code: code.rawValue, message: message).encodedForWire()
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: frame))).assumeIsolated()
            .whenComplete { _ in context.close(promise: nil) }
    }

    /// A line a client can cause by connecting, through the throttle: when the first line of a
    /// window is left out, its summary is scheduled for the end of the window.
    func notice(_ line: String, uid: UInt32, kind: String, loop: any EventLoop) {
        switch throttle.admit(NoticeThrottle.Key(uid: uid, kind: kind), at: .now) {
        case .log:
            audit.notice(line)
        case .suppressedFirst(let due):
            let (throttle, audit) = (self.throttle, self.audit)
            let (seconds, attoseconds) = due.components
            let nanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000 + 1_000_000
            loop.scheduleTask(in: .nanoseconds(nanoseconds)) {
                for summary in throttle.summaries(at: .now) { audit.notice(summary) }
            }
        case .suppressed:
            break
        }
    }

    /// `SO_PEERPIDFD` from `<asm-generic/socket.h>` (Glibc does not name it yet).
    static let soPeerPIDFD: Int32 = 77

    /// `SO_PEERCRED` of the client, and its process pinned (`PeerProcess`).
    static func peerCredentials(_ channel: any Channel) -> PeerCredentials? {
        guard let provider = channel as? SocketOptionProvider else { return nil }
        typealias UCred = (pid: Int32, uid: UInt32, gid: UInt32)  // layout of struct ucred
        let future: EventLoopFuture<UCred> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
        // On the channel's own loop the option is read at once and the future is already complete:
        // its callbacks run here, before `whenSuccess` returns.
        var credentials: UCred?
        future.assumeIsolated().whenSuccess { credentials = $0 }
        guard let cred = credentials else { return nil }
        // SO_PEERPIDFD (Linux 6.5+): the very process that connected; older kernels refuse it.
        var pidfd: Int32 = -1
        let peerPIDFD: EventLoopFuture<Int32> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(Self.soPeerPIDFD))
        peerPIDFD.assumeIsolated().whenSuccess { pidfd = $0 }
        return PeerCredentials(
            pid: cred.pid, uid: cred.uid, gid: cred.gid, userName: PeerCredentials.userName(of: cred.uid),
            process: PeerProcess(pid: cred.pid, pidfd: pidfd))
    }
}
