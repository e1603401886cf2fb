// SPDX-License-Identifier: Apache-2.0
import Dispatch
import FingerprintReader
import LocalAuthDaemon
import LocalAuthFprintdDoor
import LocalAuthSocketDoor
import LocalAuthStore
import LocalAuthSystemd
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Starts the parts in order, serves until SIGTERM or SIGINT (or, when socket-activated, until
/// idle for `idle-exit-seconds`), stops them in reverse. Tells systemd each step (`STATUS=`),
/// `READY=1` once a connection can be answered, `WATCHDOG=1` while the event loop and the daemon
/// actor answer, `STOPPING=1` on the way out.
enum DaemonMain {
    /// Why the daemon stops.
    enum Stop: Sendable, Equatable {
        case signal(Int32)
        case idle(Int)
    }

    static func run(_ options: DaemonOptions) async -> Int32 {
        let options = options.withSystemdDirectories()
        let early = AuditLog()
        signal(SIGPIPE, SIG_IGN)
        raiseDescriptorLimit()
        // Before anything can answer: a SIGTERM that arrives once a client has been served must
        // stop the daemon, never fall between ignoring the default action and the source.
        let stop = AsyncStream.makeStream(of: Stop.self)
        var sources: [DispatchSourceSignal] = []
        for sig in [SIGTERM, SIGINT] {
            signal(sig, SIG_IGN)  // first: libdispatch's source then takes the signal over
            let source = DispatchSource.makeSignalSource(signal: sig)
            source.setEventHandler { stop.continuation.yield(.signal(sig)) }
            source.resume()
            sources.append(source)
        }
        Notify.status("Reading the configuration")
        let config: DaemonConfiguration
        do {
            let (loaded, warnings) = try loadConfiguration(options)
            for warning in warnings { early.notice(warning) }
            config = loaded
        } catch {
            return await failedStart(
                "\(error)", status: 2, audit: early, stop: stop.continuation, stopped: stop.stream)
        }
        let audit = AuditLog(level: config.logLevel)
        var virtualReaderSocket: String?
        if options.virtualReader || config.virtualReader {
            // The virtual driver reads these at enumeration; set before libfprint starts.
            let socket = options.stateDirectory + "/virtual-reader.socket"
            setenv("FP_VIRTUAL_DEVICE", socket, 1)
            virtualReaderSocket = socket
        }
        Notify.status("Opening the state directory \(options.stateDirectory)")
        let store: EnrollmentStore
        do {
            #if DEBUG
                // Kill-point tests (docs/reliability.md, section 2): at every write step, say so
                // on the FIFO `<dir>/stopped` and wait for a byte on `<dir>/go` (or a kill -9).
                if let dir = getenv("LOCALAUTHD_DEBUG_WRITE_STEP_FIFOS").map({ String(cString: $0) }) {
                    store = try EnrollmentStore.pausingAtWriteSteps(
                        stateDirectory: options.stateDirectory, exclusive: true, sealing: config.sealing,
                        // The migration's own kill points (opening a plain store) are wanted too.
                        duringOpen: getenv("LOCALAUTHD_DEBUG_WRITE_STEP_DURING_OPEN") != nil,
                        onNotice: { audit.notice($0) },
                        pause: {
                            var byte: UInt8 = 0x73
                            let stopped = open(dir + "/stopped", O_WRONLY | O_CLOEXEC)
                            _ = write(stopped, &byte, 1)
                            close(stopped)
                            let go = open(dir + "/go", O_RDONLY | O_CLOEXEC)
                            _ = read(go, &byte, 1)
                            close(go)
                        })
                } else {
                    store = try EnrollmentStore(
                        stateDirectory: options.stateDirectory, exclusive: true, sealing: config.sealing
                    ) {
                        audit.notice($0)
                    }
                }
            #else
                store = try EnrollmentStore(
                    stateDirectory: options.stateDirectory, exclusive: true, sealing: config.sealing
                ) {
                    audit.notice($0)
                }
            #endif
        } catch {
            return await failedStart(
                "cannot use the state directory \(options.stateDirectory): \(error)", status: 1, audit: audit,
                stop: stop.continuation, stopped: stop.stream)
        }
        if store.madeMachineKey, let method = store.sealingMethod {
            audit.info("sealed \(options.stateDirectory) to this machine (\(method.rawValue))")
        }
        Notify.status("Starting libfprint")
        let reader: FingerprintReader?
        do {
            // libfprint starts and enumerates on its GLib thread while the socket is set up and
            // answers: what needs no reader (list, passcodes, rights' metadata) is answered
            // before it is done; what needs one waits for it (docs/performance.md, cold start).
            let linger = options.lingerMsOverride.map { $0 == -1 ? nil : $0 } ?? config.readerLingerMs
            var beforeStart: (@Sendable () -> Void)?
            #if DEBUG
                // Cold-start tests: libfprint starts only once a byte arrives on this FIFO.
                if let fifo = getenv("LOCALAUTHD_DEBUG_HOLD_LIBFPRINT_FIFO").map({ String(cString: $0) }) {
                    beforeStart = {
                        var byte: UInt8 = 0
                        let fd = open(fifo, O_RDONLY | O_CLOEXEC)
                        _ = read(fd, &byte, 1)
                        close(fd)
                    }
                }
            #endif
            reader = try FingerprintReader(startingWithLingerMs: linger, beforeStart: beforeStart)
        } catch {
            audit.notice("libfprint failed to start (\(error)); serving without biometrics")
            reader = nil
        }
        let logind = Logind(log: audit)
        let daemon = Daemon(
            reader: reader, store: store, configuration: config, virtualReaderSocket: virtualReaderSocket, audit: audit,
            logind: logind)
        logind.watchSleep { goingToSleep in
            if goingToSleep { await daemon.prepareForSleep() } else { await daemon.resumedFromSleep() }
        }
        if Daemon.importsFprintdPrintsAtFirstStart(options, config) {
            await daemon.importFprintdPrintsAtFirstStart(
                from: config.fprintdStateDir, stateDirectory: options.stateDirectory)
        }
        let adopted = SocketActivation.adoptedSocket()
        let place = adopted != nil ? "the socket from systemd" : options.socketPath
        // A D-Bus client's claim is invisible to the socket's idle count: with fprintd's API the
        // daemon stays, as fprintd -t does.
        let fprintdCompat = options.fprintdCompat || config.fprintdCompat
        let idleExit = adopted != nil && !fprintdCompat ? config.idleExitSeconds : 0
        func serving(_ readers: String) -> String {
            "Serving on \(place); reader: \(readers)"
                + (idleExit > 0 ? "; exits after \(idleExit) s without a connection" : "")
        }
        let starting = reader == nil ? "no reader" : "starting"
        // systemd's socket already takes connections: say READY before the first is accepted, so
        // READY=1 precedes every answer. Our own socket: after binding, so "ready" means connectable.
        if adopted != nil { Notify.send("READY=1\nSTATUS=\(serving(starting))") }
        let server: Server
        do {
            if adopted == nil {
                try makeParentDirectory(of: options.socketPath)
                // Binding would unlink a live daemon's socket and take its clients (issue 13, L6).
                if socketAnswers(options.socketPath) {
                    throw StartupError(
                        description: "another daemon answers on it; stop that one first (its socket is left alone)")
                }
            }
            var limits = Server.Limits()
            if let idleMs = options.connectionIdleMsOverride { limits.idleTimeoutMs = idleMs }
            server = try await Server(
                daemon: daemon, socketPath: options.socketPath, adoptedFD: adopted, limits: limits, audit: audit)
        } catch {
            audit.notice("cannot listen on \(options.socketPath): \(error)")
            Notify.status("Cannot listen on \(options.socketPath): \(error)")
            return 1
        }
        var fprintd: FprintdService?
        if fprintdCompat {
            do {
                fprintd = try await FprintdService(
                    daemon: daemon, reader: reader, audit: audit, requests: server.gate, throttle: server.throttle,
                    callsPerUID: server.limits.connectionsPerUID)
            } catch {
                audit.notice("cannot serve fprintd's D-Bus API: \(error); serving the socket only")
            }
        }
        if adopted == nil { Notify.send("READY=1\nSTATUS=\(serving(starting))") }
        let devices = await reader?.devices() ?? []
        let readers = devices.isEmpty ? "no reader" : devices.map(\.name).joined(separator: ", ")
        Notify.status(serving(readers))
        audit.info("ready on \(place); readers: \(readers)")

        var background: [Task<Void, Never>] = [Task { await returnMemoryAfterBursts(server: server) }]
        if let interval = Notify.watchdogInterval() {
            background.append(Task { await watchdog(every: interval, daemon: daemon, server: server) })
        }
        if idleExit > 0 {
            background.append(
                Task {
                    if await waitUntilIdle(seconds: idleExit, server: server, serving: serving(readers)) {
                        stop.continuation.yield(.idle(idleExit))
                    }
                })
        }
        var it = stop.stream.makeAsyncIterator()
        let reason = await it.next() ?? .signal(SIGTERM)
        for task in background { task.cancel() }
        switch reason {
        case .signal(let sig):
            Notify.send("STOPPING=1\nSTATUS=Stopping on signal \(sig)")
            audit.info("stopping on signal \(sig)")
        case .idle(let seconds):
            Notify.send("STOPPING=1\nSTATUS=Exiting: no connection for \(seconds) s; the socket starts it again")
            audit.info("exiting after \(seconds) s without a connection; the next connection starts the daemon again")
        }
        // Tell the clients waiting for a finger that the request ended, then close.
        if await daemon.endEvaluationsForStop() > 0 { await server.drain(within: .seconds(2)) }
        fprintd?.shutdown()
        await server.shutdown()
        logind.close()
        if let reader, !(await finishes(within: .seconds(3), { await reader.shutdown() })) {
            // libfprint can be stuck in a call that never returns (an enumeration after an unplug):
            // the state is already on disk, so exit rather than hang systemd's stop job.
            audit.notice("libfprint did not stop within 3 s; exiting without it")
        }
        if adopted == nil { unlink(options.socketPath) }
        _ = sources
        return 0
    }

    /// Runs `body` in a task of its own; false when it has not finished after `limit` (it runs on).
    static func finishes(within limit: Duration, _ body: @escaping @Sendable () async -> Void) async -> Bool {
        let (outcome, report) = AsyncStream.makeStream(of: Bool.self)
        Task {
            await body()
            report.yield(true)
        }
        let timer = Task {
            try? await Task.sleep(for: limit)
            report.yield(false)
        }
        var first = outcome.makeAsyncIterator()
        let finished = await first.next() ?? false
        timer.cancel()
        return finished
    }

    /// `WATCHDOG=1` every `interval`, each time only after the event loop and the daemon actor have
    /// answered, so a wedged daemon stops pinging and systemd restarts it.
    static func watchdog(every interval: Duration, daemon: Daemon, server: Server) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            if Task.isCancelled { return }
            await daemon.ping()
            guard await server.eventLoopAnswers() else { return }
            Notify.send("WATCHDOG=1")
        }
    }

    /// Gives the memory of a burst of connections back to the system once they are gone: malloc
    /// keeps what a thousand simultaneous connections freed for reuse (13.8 MB of private dirty
    /// memory, docs/performance.md) unless asked. Looks every 2 s; trims when at least `burst`
    /// connections came since the last trim and few are open now (an app or a session may hold one
    /// for long: they must not keep a burst's memory held).
    static func returnMemoryAfterBursts(server: Server, burst: Int = 64) async {
        var trimmedAt = server.connectionCounts.accepted
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(2))
            let (open, accepted) = server.connectionCounts
            guard open <= 16, accepted - trimmedAt >= burst else { continue }
            trimmedAt = accepted
            _ = mallocTrim(0)
        }
    }

    /// Returns true once no client has been connected for `seconds` and the listening socket is
    /// closed with every accepted connection served: a client that connects after that waits in
    /// systemd's backlog for the next start, so no request is lost.
    static func waitUntilIdle(seconds: Int, server: Server, serving: String) async -> Bool {
        let tick = Duration.milliseconds(min(1000, max(50, seconds * 250)))
        let clock = ContinuousClock()
        var idleSince = clock.now
        var lastCount = -1
        while !Task.isCancelled {
            try? await Task.sleep(for: tick)
            let count = server.openConnections
            if count != lastCount {
                Notify.status(count == 0 ? serving : "\(serving); \(count) client(s) connected")
                lastCount = count
            }
            if count > 0 {
                idleSince = clock.now
                continue
            }
            guard clock.now - idleSince >= .seconds(seconds) else { continue }
            await server.stopAcceptingAndServeTheAccepted()
            return true
        }
        return false
    }

    /// `--config FILE` (which must exist) alone, else `/etc/localauthd.conf` when it exists and the
    /// drop-in directories (`DaemonConfiguration.dropInDirectories`).
    static func loadConfiguration(_ options: DaemonOptions) throws(DaemonConfiguration.Problem) -> (
        DaemonConfiguration, [String]
    ) {
        if let path = options.configPath { return try DaemonConfiguration.load(path: path, required: true) }
        return try DaemonConfiguration.load(
            path: DaemonConfiguration.defaultPath, required: false,
            dropInDirectories: DaemonConfiguration.dropInDirectories)
    }

    /// `--check-config`: prints the warnings and the verdict; 0 when the daemon would start with it.
    static func checkConfiguration(_ options: DaemonOptions) -> Int32 {
        let path = options.configPath ?? DaemonConfiguration.defaultPath
        do {
            let (_, warnings) = try loadConfiguration(options)
            for warning in warnings { print("warning: \(warning)") }
            print("\(path): valid")
            return 0
        } catch {
            print("\(error)")
            return 1
        }
    }

    /// Raises the soft limit on open descriptors to the hard one (at most 65536): each of up to
    /// 4096 connections holds its socket and the pin of its process (`PeerProcess`), and
    /// systemd's default soft limit is 1024.
    static func raiseDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        let wanted = min(limit.rlim_max, 65536)
        guard limit.rlim_cur < wanted else { return }
        limit.rlim_cur = wanted
        _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
    }

    /// True when something accepts connections on the Unix socket at `path`; false when nothing is
    /// there or the file is a stale socket nobody listens on (the bind then replaces it).
    static func socketAnswers(_ path: String) -> Bool {
        var st = stat()
        guard lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFSOCK else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        // A full backlog (EAGAIN) is a listener too; refused or absent is a stale file.
        return result == 0 || errno == EAGAIN || errno == EINPROGRESS
    }

    /// Why the daemon cannot start on the paths it was given.
    struct StartupError: Error, CustomStringConvertible {
        let description: String
    }

    /// The socket's directory: made (0755) when missing. Refused when another user could change
    /// it or a directory above it (their symbolic link, their directory, one others may write that
    /// is not sticky): through it they could make root unlink and replace a socket elsewhere, or
    /// swap the socket for a link that root's chmod would follow (issue 13, M4).
    static func makeParentDirectory(of path: String) throws {
        if let problem = try TrustedPath.ancestorProblem(of: path) {
            throw StartupError(description: "refusing the socket \(path): \(problem)")
        }
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return }
        let dir = String(path[..<slash])
        var st = stat()
        if lstat(dir, &st) == 0 { return }  // exists: checked above as the last directory on the way
        guard mkdir(dir, 0o755) == 0 || errno == EEXIST else {
            throw StartupError(description: "cannot create \(dir): \(String(cString: strerror(errno)))")
        }
    }
}

/// glibc's `malloc_trim(3)` (`<malloc.h>` is not in Swift's Glibc module): gives free heap pages of
/// every arena back to the kernel.
@_silgen_name("malloc_trim")
private func mallocTrim(_ pad: Int) -> Int32

extension DaemonMain {
    /// The start failed with `reason`. Socket-activated: serve the reason (`StartFailure`) until a
    /// signal or the idle exit, then exit 0, so that systemd neither restarts the daemon nor gives
    /// the socket up. Started by hand: exit `status`, the reason on standard error.
    static func failedStart(
        _ reason: String, status: Int32, audit: AuditLog, stop: AsyncStream<Stop>.Continuation,
        stopped: AsyncStream<Stop>
    ) async -> Int32 {
        audit.error("refusing to start: \(reason)")
        guard let listening = SocketActivation.adoptedSocket() else {
            Notify.status("Cannot start: \(reason)")
            return status
        }
        Notify.send("READY=1\nSTATUS=Cannot start: \(reason); answering every request with that")
        let flag = StopFlag()
        DispatchQueue(label: "localauthd.start-failure").async {
            if StartFailure.answerEveryRequest(on: listening, reason: reason, stopped: flag.value) {
                stop.yield(.idle(StartFailure.idleExitSeconds))
            }
        }
        var it = stopped.makeAsyncIterator()
        let why = await it.next() ?? .signal(SIGTERM)
        flag.value.store(true, ordering: .relaxed)
        if case .idle(let seconds) = why {
            audit.info("exiting after \(seconds) s without a connection; the next connection starts the daemon again")
        }
        Notify.send("STOPPING=1")
        return 0
    }

    final class StopFlag: Sendable {
        let value = Atomic(false)
    }
}
