// SPDX-License-Identifier: Apache-2.0
// What runs once the parts are built: each a `Service` (ServiceGroup.swift, swift-service-lifecycle's
// shape), run together by one `ServiceGroup` (main.swift). The group stops them in the reverse of their order: the one that
// ends the run first (a stop signal, the idle exit), then the background loops, then the doors
// (the socket's drains the running evaluations), then the sleep watcher.

import Dispatch
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
/// Runs once and ends.
struct UsersDirectorySweep: Service {
    let store: EnrollmentStore
    let audit: AuditLog
    var after = Duration.seconds(1)

    func run() async throws {
        _ = await sleepUnlessShutDown(for: after)
        do {
            try store.removeStaleTemporaryFilesInUsersDirectory()
        } catch {
            audit.notice("cannot remove the temporary files left in \(store.stateDirectory)/users: \(error)")
        }
    }
}

/// `WATCHDOG=1` every `interval`, each time only after the event loop and the daemon actor have
/// answered, so a wedged daemon stops pinging and systemd restarts it.
struct Watchdog: Service {
    let interval: Duration
    let daemon: Daemon
    let server: Server

    func run() async throws {
        let interval = self.interval
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
    let serving: String
    let audit: AuditLog

    func run() async throws {
        let (seconds, server, serving) = (self.seconds, self.server, self.serving)
        guard await cancelWhenGracefulShutdown({ await Self.waitUntilIdle(seconds, server, serving) }) == true else {
            return
        }
        Stop.idle(seconds).announce(audit)
    }

    static func waitUntilIdle(_ seconds: Int, _ server: Server, _ serving: String) async -> Bool {
        var said = serving
        func say(_ status: String) {
            if status != said { Notify.status(status) }
            said = status
        }
        while !Task.isCancelled {
            guard var since = await server.idleSince() else { return false }
            say(serving)
            // One sleep to the deadline; a connection meanwhile moved it (or is still open).
            while !Task.isCancelled {
                try? await Task.sleep(until: since + .seconds(seconds), clock: .continuous)
                guard let now = server.idleSinceNow else {
                    say("\(serving); \(server.openConnections) client(s) connected")
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

/// SIGTERM or SIGINT ends the run. The signals are taken over before anything can answer
/// (`install`): one that arrives once a client has been served must stop the daemon, never fall
/// between ignoring the default action and the source.
struct StopSignals: Service {
    let received: AsyncStream<Int32>
    /// Where the stop is recorded: the first start's log until the configuration names its level.
    var audit: AuditLog
    /// The signals' sources, kept for as long as they are to be heard.
    let sources: Sources

    final class Sources: @unchecked Sendable {  // set once, never changed
        let sources: [DispatchSourceSignal]
        init(_ sources: [DispatchSourceSignal]) { self.sources = sources }
    }

    static func install(audit: AuditLog) -> StopSignals {
        let (received, yield) = AsyncStream.makeStream(of: Int32.self)
        var sources: [DispatchSourceSignal] = []
        for sig in [SIGTERM, SIGINT] {
            signal(sig, SIG_IGN)  // first: libdispatch's source then takes the signal over
            let source = DispatchSource.makeSignalSource(signal: sig)
            source.setEventHandler { yield.yield(sig) }
            source.resume()
            sources.append(source)
        }
        return StopSignals(received: received, audit: audit, sources: Sources(sources))
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

/// Why the daemon stops, told to systemd (`STOPPING=1`) and the journal.
enum Stop {
    case signal(Int32)
    case idle(Int)

    func announce(_ audit: AuditLog) {
        switch self {
        case .signal(let sig):
            Notify.send("STOPPING=1\nSTATUS=Stopping on signal \(sig)")
            audit.info("stopping on signal \(sig)")
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
