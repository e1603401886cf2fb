// SPDX-License-Identifier: Apache-2.0
// What runs once the parts are built: each a `Service` (ServiceGroup.swift, swift-service-lifecycle's
// shape), run together by one `ServiceGroup` (main.swift). The group stops them in the reverse of their order: the one that
// ends the run first (a stop signal, the idle exit), then the background loops, then the doors
// (the socket's drains the running evaluations), then the sleep watcher.

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

/// A part that serves from the moment it was built and, once told to shut down, stops.
protocol StoppedAtShutdown: Service {
    func stop() async
}

extension StoppedAtShutdown {
    func run() async throws {
        await gracefulShutdown()
        await stop()
    }
}

/// logind's `PrepareForSleep`, for the daemon: reuse windows forgotten and evaluations cancelled
/// before sleep, the reader resumed after it. Closes the logind connection last.
struct SleepWatcher: StoppedAtShutdown {
    let logind: Logind

    /// Follows `PrepareForSleep` from now on, its delay inhibitor asked for at once: before the
    /// doors answer, so that no request's question to logind waits behind that call (logind's
    /// connection serves one call at a time), and no stop finds it still under way.
    static func start(logind: Logind, daemon: Daemon) -> SleepWatcher {
        logind.watchSleep { goingToSleep in
            if goingToSleep { await daemon.prepareForSleep() } else { await daemon.resumedFromSleep() }
        }
        return SleepWatcher(logind: logind)
    }

    func stop() async { logind.close() }
}

/// The Unix socket's door: it serves from the moment it was bound. On the way out the running
/// evaluations end as `systemCancel` and their clients are told so (the drain) before it closes.
struct SocketDoor: StoppedAtShutdown {
    let server: Server
    let daemon: Daemon

    func stop() async {
        if await daemon.endEvaluationsForStop() > 0 { await server.drain(within: .seconds(2)) }
        await server.shutdown()
    }
}

/// fprintd's D-Bus door (`--fprintd-compat`): on the bus from the moment it was built; leaves it.
struct FprintdDoor: StoppedAtShutdown {
    let door: FprintdService

    func stop() async { door.shutdown() }
}

/// The `.tmp-` files a crash could leave in the state directory's `users/` itself, removed
/// (`EnrollmentStore.removeStaleTemporaryFilesInUsersDirectory`, safe beside any request) a second
/// after the daemon serves with its reader up, or at its stop if that comes first. Not when the
/// store opens: listing `users/` there made the cold start grow with the accounts; nor at once: at
/// 10,000 accounts the listing beside a cold start's first request made its answer 5.9 ms later
/// on two busy cores (docs/performance.md). Each account's own directory is swept at its first use.
/// Runs once and ends. The services run while libfprint enumerates: the second is counted once
/// the reader is up.
struct UsersDirectorySweep: Service {
    let store: EnrollmentStore
    let audit: AuditLog
    let reader: FingerprintReader?
    var after = Duration.seconds(1)

    func run() async throws {
        if let reader { _ = await leftAtGracefulShutdown({ await reader.enumerated() }) }
        _ = await sleepUnlessShutDown(for: after)
        do {
            try store.removeStaleTemporaryFilesInUsersDirectory()
        } catch {
            audit.notice("cannot remove the temporary files left in \(store.stateDirectory)/users: \(error)")
        }
    }
}

/// `WATCHDOG=1` every `interval`, each time only after the event loop and the daemon actor have
/// answered, so a wedged daemon stops pinging and systemd restarts it. The first once libfprint
/// has enumerated: a start stuck there is restarted too.
struct Watchdog: Service {
    let interval: Duration
    let daemon: Daemon
    let server: Server
    let reader: FingerprintReader?

    func run() async throws {
        let interval = self.interval
        if let reader { guard await leftAtGracefulShutdown({ await reader.enumerated() }) != nil else { return } }
        while await sleepUnlessShutDown(for: interval) {
            await daemon.ping()
            guard await server.eventLoopAnswers() else { return }
            Notify.send("WATCHDOG=1")
        }
    }
}

/// Gives the memory of a burst of connections back to the system once they are gone: malloc
/// keeps what a thousand simultaneous connections freed for reuse (13.8 MB of private dirty
/// memory, docs/performance.md) unless asked. Trims when the connection that ends a burst closes
/// (at least `burst` came since the last trim, at most 16 are open: an app or a session may hold
/// one for long, and must not keep a burst's memory held), and once more `settle` later.
///
/// It waits for that close and never polls: a periodic wake-up kept one of the cooperative pool's
/// threads alive for good (libdispatch ends a thread after 5 s without work), and a live pool
/// thread keeps up to 1024 of libdispatch's 64-byte continuations cached for reuse. A burst's
/// continuations were allocated amid its connections' objects, one on each page once those were
/// freed: 2.5 MB that no trim could return (docs/performance.md, "The burst's memory, round
/// three"). Idle, the pool's threads end; what they cached is freed with them, and the second trim
/// gives those pages back.
struct MemoryTrim: Service {
    let server: Server
    var burst = 64
    /// Longer than libdispatch's 5 s: the pool's threads the burst woke have ended by then.
    var settle = Duration.seconds(7)

    func run() async throws {
        let server = self.server
        let burst = self.burst
        var since = server.connectionCounts.accepted
        while true {
            let from = since
            let ended = await cancelWhenGracefulShutdown {
                await server.quietAfterBurst(since: from, burst: burst, openAtMost: 16)
            }
            guard let accepted = ended ?? nil else { return }
            since = accepted
            _ = mallocTrim(0)
            guard await sleepUnlessShutDown(for: settle) else { return }
            _ = mallocTrim(0)
        }
    }
}

/// The `STATUS=` line while serving: the readers are named in it once libfprint has enumerated.
/// Told to systemd under its lock, so that an older line never follows a newer one.
final class ServingStatus: Sendable {
    private let line: Mutex<String>
    init(_ line: String) { self.line = Mutex(line) }

    /// The line from now on, told at once.
    func change(to newLine: String) {
        line.withLock {
            $0 = newLine
            Notify.status(newLine)
        }
    }

    /// The line, with how many clients are connected when some are.
    func tell(clients: Int) {
        line.withLock { Notify.status(clients == 0 ? $0 : "\($0); \(clients) client(s) connected") }
    }
}

/// Once libfprint has enumerated: the readers named to systemd (`STATUS=`) and in the log
/// ("ready on …"). A service, so that the run, and with it the stop signals, does not wait for it.
struct ReadersNamed: Service {
    let reader: FingerprintReader?
    let status: ServingStatus
    let audit: AuditLog
    let place: String
    let serving: @Sendable (String) -> String

    func run() async throws {
        let reader = self.reader
        guard let devices = await leftAtGracefulShutdown({ await reader?.devices() ?? [] }) else { return }
        let readers = devices.isEmpty ? "no reader" : devices.map(\.name).joined(separator: ", ")
        status.change(to: serving(readers))
        audit.info("ready on \(place); readers: \(readers)")
    }
}

/// Socket-activated: ends the run once no client has been connected for `seconds` and the
/// listening socket is closed with every accepted connection served; a client that connects after
/// that waits in systemd's backlog for the next start, so no request is lost.
///
/// It never polls. It waits for the close that leaves no connection open, then sleeps until `seconds`
/// after that close, once; a connection that came and went meanwhile moves the deadline, and the
/// sleep is armed again for the new one. A look every second (as before) kept one of the cooperative
/// pool's threads alive for good, with the continuations libdispatch caches per thread: after a
/// burst, memory no trim could give back (as `MemoryTrim`'s look every 2 s did; docs/performance.md,
/// "The idle exit's timer"). So the `STATUS=` line counts the clients connected when a deadline
/// passes with one open, and is the plain line again at the close that leaves none (it was
/// refreshed every second).
struct IdleExit: Service {
    let seconds: Int
    let server: Server
    /// The `STATUS=` line while serving.
    let serving: ServingStatus
    let audit: AuditLog

    func run() async throws {
        let (seconds, server, serving) = (self.seconds, self.server, self.serving)
        guard await cancelWhenGracefulShutdown({ await Self.waitUntilIdle(seconds, server, serving) }) == true else {
            return
        }
        Stop.idle(seconds).announce(audit)
    }

    static func waitUntilIdle(_ seconds: Int, _ server: Server, _ status: ServingStatus) async -> Bool {
        var told = 0
        func tell(clients: Int) {
            if clients != told { status.tell(clients: clients) }
            told = clients
        }
        while !Task.isCancelled {
            guard var since = await server.idleSince() else { return false }
            tell(clients: 0)
            // One sleep to the deadline; a connection meanwhile moved it (or is still open).
            while !Task.isCancelled {
                try? await Task.sleep(until: since + .seconds(seconds), clock: .continuous)
                guard let now = server.idleSinceNow else {
                    tell(clients: server.openConnections)
                    break
                }
                guard now == since else {
                    since = now
                    continue
                }
                await server.stopAcceptingAndServeTheAccepted()
                return true
            }
        }
        return false
    }
}

/// SIGTERM, SIGINT or SIGHUP (unless started ignoring it, by `nohup`) ends the run. The signals are taken over before anything can answer
/// (`install`), by a handler of the daemon's own that writes the signal's number into a pipe: from
/// the moment `install` returns a stop signal is never ignored and never lost, whichever thread
/// the kernel gives it to and however late the pipe's reader starts (the byte waits in the pipe).
///
/// Not libdispatch's signal source: on Linux it takes a signal over only once its manager thread
/// has registered the source, some time after `resume()` returns (milliseconds on a loaded
/// machine), and the signal had to be ignored until then, else its default action ended the
/// process; the kernel discarded a SIGTERM that came in between, and the daemon ran on
/// (docs/reliability.md, "A stop signal at any moment of the start").
struct StopSignals: Service {
    let received: AsyncStream<Int32>
    /// Where the stop is recorded: the first start's log until the configuration names its level.
    var audit: AuditLog
    /// The pipe's read source, kept for as long as the signals are to be heard.
    let reader: Reader

    final class Reader: @unchecked Sendable {  // set once, never changed
        let source: any DispatchSourceRead
        init(_ source: any DispatchSourceRead) { self.source = source }
    }

    static let stopping: [Int32] = [SIGTERM, SIGINT, SIGHUP]

    static func install(audit: AuditLog) -> StopSignals {
        let (received, yield) = AsyncStream.makeStream(of: Int32.self)
        // pipe() then FD_CLOEXEC (Glibc has no pipe2): no other thread spawns anything yet. Both ends
        // non-blocking: the handler never waits (a full pipe already holds a stop), nor does the reader.
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { fatalError("localauthd: cannot make the stop signals' pipe: errno \(errno)") }
        for fd in ends {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        let readEnd = ends[0]
        // Stored (and the global thereby initialised) before the handler can run.
        stopSignalPipe.store(ends[1], ordering: .releasing)
        var action = sigaction()
        action.__sigaction_handler.sa_handler = stopSignalHandler
        sigfillset(&action.sa_mask)
        action.sa_flags = SA_RESTART
        for sig in stopping {
            // `nohup` ignores SIGHUP for the program it starts: kept so (the terminal may close).
            var inherited = sigaction()
            if sig == SIGHUP, sigaction(sig, nil, &inherited) == 0,
                unsafeBitCast(inherited.__sigaction_handler.sa_handler, to: Int.self)
                    == unsafeBitCast(SIG_IGN, to: Int.self)
            {
                continue
            }
            sigaction(sig, &action, nil)
        }
        #if DEBUG
            // The reliability tests' window: the signals taken over, their reader not yet started.
            if let ms = getenv("LOCALAUTHD_DEBUG_STOP_SIGNAL_READER_DELAY_MS").flatMap({ Int(String(cString: $0)) }) {
                usleep(UInt32(ms) * 1000)
            }
        #endif
        let source = DispatchSource.makeReadSource(
            fileDescriptor: readEnd, queue: DispatchQueue(label: "localauthd.stop"))
        source.setEventHandler {
            var bytes = [UInt8](repeating: 0, count: 16)
            let count = read(readEnd, &bytes, bytes.count)
            for byte in bytes.prefix(max(count, 0)) { yield.yield(Int32(byte)) }
        }
        source.resume()
        return StopSignals(received: received, audit: audit, reader: Reader(source))
    }

    func run() async throws {
        let received = self.received
        let first = await cancelWhenGracefulShutdown { () async -> Int32? in
            var signals = received.makeAsyncIterator()
            return await signals.next()
        }
        guard let sig = first ?? nil else { return }
        Stop.signal(sig).announce(audit)
    }
}

/// The stop pipe's write end (`StopSignals.install`), read by the handler: an atomic load, with no
/// lock once the global is initialised, which `install` does before it installs the handler.
private let stopSignalPipe = Atomic<Int32>(-1)

/// Runs on whichever thread the kernel picked, with every signal blocked (`sa_mask`): one
/// write(2), which is async-signal-safe, and errno as it was.
private func stopSignalHandler(_ sig: Int32) {
    let saved = errno
    var byte = UInt8(truncatingIfNeeded: sig)
    _ = write(stopSignalPipe.load(ordering: .acquiring), &byte, 1)
    errno = saved
}

/// Why the daemon stops, told to systemd (`STOPPING=1`) and the journal.
enum Stop {
    case signal(Int32)
    case idle(Int)

    func announce(_ audit: AuditLog) {
        switch self {
        case .signal(let sig):
            let name = [SIGTERM: "SIGTERM", SIGINT: "SIGINT", SIGHUP: "SIGHUP"][sig].map { " (\($0))" } ?? ""
            Notify.send("STOPPING=1\nSTATUS=Stopping on signal \(sig)\(name)")
            audit.info("stopping on signal \(sig)\(name)")
        case .idle(let seconds):
            Notify.send("STOPPING=1\nSTATUS=Exiting: no connection for \(seconds) s; the socket starts it again")
            audit.info(
                "exiting after \(seconds) s without a connection; the next connection starts the daemon again")
        }
    }
}

/// A daemon that cannot start, on systemd's socket: every request is answered with the reason
/// (`StartFailure`) until the idle exit, which ends the run.
struct StartFailureAnswers: Service {
    let listening: Int32
    let reason: String
    let audit: AuditLog

    func run() async throws {
        let (listening, reason) = (self.listening, self.reason)
        let stopped = StopFlag()
        let answering = Task {
            await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
                DispatchQueue(label: "localauthd.start-failure").async {
                    done.resume(
                        returning: StartFailure.answerEveryRequest(
                            on: listening, reason: reason, stopped: stopped.value))
                }
            }
        }
        guard let idle = await cancelWhenGracefulShutdown({ await answering.value }) else {
            stopped.value.store(true, ordering: .relaxed)  // the loop sees it within its poll's 500 ms
            _ = await answering.value
            return
        }
        if idle { Stop.idle(StartFailure.idleExitSeconds).announce(audit) }
    }

    final class StopFlag: Sendable {
        let value = Atomic(false)
    }
}

/// glibc's `malloc_trim(3)` (`<malloc.h>` is not in Swift's Glibc module): gives free heap pages of
/// every arena back to the kernel.
@_silgen_name("malloc_trim")
private func mallocTrim(_ pad: Int) -> Int32
