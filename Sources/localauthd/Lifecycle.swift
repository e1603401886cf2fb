// SPDX-License-Identifier: Apache-2.0
// Start-up's parts, each built once for main.swift: the configuration, the state directory's store,
// libfprint, the socket's place; and a start that fails.

import FingerprintReader
import LocalAuthDaemon
import LocalAuthSocketDoor
import LocalAuthStore
import LocalAuthSystemd

#if canImport(Glibc)
    import Glibc
#endif

enum Startup {
    /// The state directory's store: the one place it is built (a debug build may pause it at each
    /// write step for the kill-point tests, docs/reliability.md, section 2).
    static func openStore(_ options: DaemonOptions, _ config: DaemonConfiguration, audit: AuditLog) throws(StoreError)
        -> EnrollmentStore
    {
        #if DEBUG
            // At every write step, say so on the FIFO `<dir>/stopped` and wait for a byte on `<dir>/go`
            // (or a kill -9).
            if let dir = getenv("LOCALAUTHD_DEBUG_WRITE_STEP_FIFOS").map({ String(cString: $0) }) {
                return try EnrollmentStore.pausingAtWriteSteps(
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
            }
        #endif
        return try EnrollmentStore(stateDirectory: options.stateDirectory, exclusive: true, sealing: config.sealing) {
            audit.notice($0)
        }
    }

    /// libfprint, started on its GLib thread: it enumerates while the socket is set up and answers,
    /// so what needs no reader (list, passcodes, rights' metadata) is answered before it is done and
    /// what needs one waits for it (docs/performance.md, cold start). nil: serving without biometrics.
    static func startReader(_ options: DaemonOptions, _ config: DaemonConfiguration, audit: AuditLog)
        -> FingerprintReader?
    {
        do {
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
            return try FingerprintReader(startingWithLingerMs: linger, beforeStart: beforeStart)
        } catch {
            audit.notice("libfprint failed to start (\(error)); serving without biometrics")
            return nil
        }
    }

    /// The virtual reader's control socket, with `--virtual-reader` or `virtual-reader = yes`: the
    /// virtual driver reads it at enumeration, so it is set before libfprint starts.
    static func virtualReaderSocket(_ options: DaemonOptions, _ config: DaemonConfiguration) -> String? {
        guard options.virtualReader || config.virtualReader else { return nil }
        let socket = options.stateDirectory + "/virtual-reader.socket"
        setenv("FP_VIRTUAL_DEVICE", socket, 1)
        return socket
    }

    /// The socket bound (`--socket`), or adopted from systemd (`adopted`), with its limits.
    static func listen(
        _ options: DaemonOptions, adopted: Int32?, daemon: Daemon, audit: AuditLog
    ) async throws -> Server {
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
        return try await Server(
            daemon: daemon, socketPath: options.socketPath, adoptedFD: adopted, limits: limits, audit: audit)
    }

    /// The start failed with `reason`. Socket-activated: serve the reason (`StartFailureAnswers`)
    /// until a stop signal or the idle exit, then exit 0, so that systemd neither restarts the
    /// daemon nor gives the socket up. Started by hand: exit `status`, the reason on standard error.
    static func failed(_ reason: String, status: Int32, audit: AuditLog, signals: StopSignals) async -> Int32 {
        audit.error("refusing to start: \(reason)")
        guard let listening = SocketActivation.adoptedSocket() else {
            Notify.status("Cannot start: \(reason)")
            return status
        }
        Notify.send("READY=1\nSTATUS=Cannot start: \(reason); answering every request with that")
        let answers = StartFailureAnswers(listening: listening, reason: reason, audit: audit)
        await ServiceGroup(entries: [.endsTheRun(answers), .endsTheRun(signals)]).run()
        Notify.send("STOPPING=1")
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
