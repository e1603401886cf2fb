// SPDX-License-Identifier: Apache-2.0
// localauthd: the parts built once, in order (configuration, store, reader, daemon, doors), then run
// as services (Services.swift) until SIGTERM, SIGINT or the idle exit, and stopped in reverse.
// systemd is told each step (`STATUS=`), `READY=1` once a connection can be answered, `WATCHDOG=1`
// while the event loop and the daemon actor answer, `STOPPING=1` on the way out.

import FingerprintReader
import LocalAuthDaemon
import LocalAuthFprintdDoor
import LocalAuthSocketDoor
import LocalAuthStore
import LocalAuthSystemd

#if canImport(Glibc)
    import Glibc
#endif

func serve(_ options: DaemonOptions) async -> Int32 {
    let options = options.withSystemdDirectories()
    let early = AuditLog()
    signal(SIGPIPE, SIG_IGN)
    Startup.raiseDescriptorLimit()
    // Before anything can answer (`StopSignals`).
    var signals = StopSignals.install(audit: early)

    Notify.status("Reading the configuration")
    let config: DaemonConfiguration
    do {
        let (loaded, warnings) = try Startup.loadConfiguration(options)
        for warning in warnings { early.notice(warning) }
        config = loaded
    } catch {
        return await Startup.failed("\(error)", status: 2, audit: early, signals: signals)
    }
    let audit = AuditLog(level: config.logLevel)
    signals.audit = audit
    let virtualReaderSocket = Startup.virtualReaderSocket(options, config)

    Notify.status("Opening the state directory \(options.stateDirectory)")
    let store: EnrollmentStore
    do {
        store = try Startup.openStore(options, config, audit: audit)
    } catch {
        return await Startup.failed(
            "cannot use the state directory \(options.stateDirectory): \(error)", status: 1, audit: audit,
            signals: signals)
    }
    if store.madeMachineKey, let method = store.sealingMethod {
        audit.info("sealed \(options.stateDirectory) to this machine (\(method.rawValue))")
    }

    Notify.status("Starting libfprint")
    let reader = Startup.startReader(options, config, audit: audit)
    let logind = Logind(log: audit)
    let daemon = Daemon(
        reader: reader, store: store, configuration: config, virtualReaderSocket: virtualReaderSocket, audit: audit,
        logind: logind)
    let sleepWatcher = SleepWatcher.start(logind: logind, daemon: daemon)
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
    @Sendable func serving(_ readers: String) -> String {
        "Serving on \(place); reader: \(readers)"
            + (idleExit > 0 ? "; exits after \(idleExit) s without a connection" : "")
    }
    let starting = reader == nil ? "no reader" : "starting"
    // systemd's socket already takes connections: say READY before the first is accepted, so
    // READY=1 precedes every answer. Our own socket: after binding, so "ready" means connectable.
    if adopted != nil { Notify.send("READY=1\nSTATUS=\(serving(starting))") }
    let server: Server
    do {
        server = try await Startup.listen(options, adopted: adopted, daemon: daemon, audit: audit)
    } catch {
        audit.notice("cannot listen on \(options.socketPath): \(error)")
        Notify.status("Cannot listen on \(options.socketPath): \(error)")
        return 1
    }
    var fprintd: FprintdService?
    if fprintdCompat {
        do {
            // Its callers share the socket's per-uid request turns and notice throttle.
            fprintd = try await FprintdService(
                daemon: daemon, audit: audit, requests: server.gate, throttle: server.throttle,
                callsPerUID: server.limits.connectionsPerUID)
        } catch {
            audit.notice("cannot serve fprintd's D-Bus API: \(error); serving the socket only")
        }
    }
    if adopted == nil { Notify.send("READY=1\nSTATUS=\(serving(starting))") }
    // The readers are named once libfprint has enumerated (`ReadersNamed`), while the services
    // already run: a stop signal during a long or stuck enumeration stops the daemon.
    let status = ServingStatus(serving(starting))

    // Stopped in the reverse of this order (Services.swift).
    var services: [ServiceGroup.Entry] = [
        .endsTheRun(sleepWatcher),
        // Not before READY, nor beside the first answers: it lists every account's name.
        .mayEnd(UsersDirectorySweep(store: store, audit: audit, reader: reader)),
    ]
    if let fprintd { services.append(.endsTheRun(FprintdDoor(door: fprintd))) }
    services.append(.endsTheRun(SocketDoor(server: server, daemon: daemon)))
    if let interval = Notify.watchdogInterval() {
        services.append(.mayEnd(Watchdog(interval: interval, daemon: daemon, server: server, reader: reader)))
    }
    services.append(.mayEnd(MemoryTrim(server: server)))
    services.append(
        .mayEnd(ReadersNamed(reader: reader, status: status, audit: audit, place: place, serving: serving)))
    if idleExit > 0 {
        services.append(.endsTheRun(IdleExit(seconds: idleExit, server: server, serving: status, audit: audit)))
    }
    services.append(.endsTheRun(signals))
    await ServiceGroup(entries: services).run()

    if let reader, !(await Startup.finishes(within: .seconds(3), { await reader.shutdown() })) {
        // libfprint can be stuck in a call that never returns (an enumeration after an unplug):
        // the state is already on disk, so exit rather than hang systemd's stop job.
        audit.notice("libfprint did not stop within 3 s; exiting without it")
    }
    if adopted == nil { unlink(options.socketPath) }
    return 0
}

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") || arguments.contains("-h") {
    print(DaemonOptions.usage)
    exit(0)
}
do {
    let options = try DaemonOptions(arguments: arguments)
    exit(options.checkConfig ? Startup.checkConfiguration(options) : await serve(options))
} catch {
    let text = "localauthd: \(error)\n\(DaemonOptions.usage)\n"
    _ = text.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    exit(2)
}
