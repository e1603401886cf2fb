// SPDX-License-Identifier: Apache-2.0
import CSystemd
import Dispatch
import FingerprintReader
import LocalAuthStore

#if canImport(Glibc)
    import Glibc
#endif

/// The daemon's command line: `localauthd --socket PATH --state-dir DIR [--config FILE] [--virtual-reader]`.
public struct DaemonOptions: Sendable, Equatable {
    public var socketPath = "/run/localauthd/socket"
    public var stateDirectory = "/var/lib/localauthd"
    public var configPath: String?
    public var virtualReader = false
    /// `--linger-ms`, overriding the configuration; -1: never close.
    public var lingerMsOverride: Int?
    /// `--check-config`: validate the configuration and exit.
    public var checkConfig = false

    public static let usage = """
        usage: localauthd [--socket PATH] [--state-dir DIR] [--config FILE] [--virtual-reader] [--linger-ms N]
               localauthd --check-config [--config FILE]
          --socket PATH      the Unix socket to serve (default /run/localauthd/socket); a socket
                             passed by systemd (LISTEN_FDS) is used instead when present
          --state-dir DIR    enrolled prints, counters and passcode hashes (default /var/lib/localauthd)
          --config FILE      configuration (default /etc/localauthd.conf when it exists)
          --check-config     validate the configuration, print what is wrong, and exit (0: valid)
          --virtual-reader   use libfprint's virtual_device, driven by `localauthctl simulate`
          --linger-ms N      keep the reader open N ms after its last use (overrides reader-linger-ms; -1: never close)
        """

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case unknown(String)
        case missingValue(String)
        case badValue(String, String)
        public var description: String {
            switch self {
            case .unknown(let a): "unknown argument '\(a)'"
            case .missingValue(let a): "\(a) needs a value"
            case .badValue(let a, let v): "\(a): '\(v)' is not valid"
            }
        }
    }

    public init() {}

    public init(arguments: [String]) throws(ParseError) {
        var i = 0
        func value(_ flag: String) throws(ParseError) -> String {
            i += 1
            guard i < arguments.count, !arguments[i].hasPrefix("--") else { throw .missingValue(flag) }
            return arguments[i]
        }
        while i < arguments.count {
            let a = arguments[i]
            switch a {
            case "--socket":
                socketPath = try value(a)
                guard socketPath.hasPrefix("/"), socketPath.utf8.count < 108 else { throw .badValue(a, socketPath) }
            case "--state-dir":
                stateDirectory = try value(a)
                guard stateDirectory.hasPrefix("/") else { throw .badValue(a, stateDirectory) }
            case "--config": configPath = try value(a)
            case "--virtual-reader": virtualReader = true
            case "--check-config": checkConfig = true
            case "--linger-ms":
                let v = try value(a)
                guard let n = Int(v), n >= -1 else { throw .badValue(a, v) }
                lingerMsOverride = n
            default: throw .unknown(a)
            }
            i += 1
        }
    }
}

/// Starts the parts in order, serves until SIGTERM or SIGINT, stops them in reverse.
public enum DaemonMain {
    public static func run(_ options: DaemonOptions) async -> Int32 {
        let audit = AuditLog()
        signal(SIGPIPE, SIG_IGN)
        let config: DaemonConfiguration
        do {
            let (loaded, warnings) = try loadConfiguration(options)
            for warning in warnings { audit.notice(warning) }
            config = loaded
        } catch {
            audit.notice("refusing to start: \(error)")
            return 2
        }
        var settings = Daemon.Settings()
        settings.lockout = config.lockout
        settings.enrollTimeoutMs = config.enrollTimeoutMs
        if options.virtualReader {
            // The virtual driver reads these at enumeration; set before libfprint starts.
            let socket = options.stateDirectory + "/virtual-reader.socket"
            setenv("FP_VIRTUAL_DEVICE", socket, 1)
            settings.virtualReaderSocket = socket
        }
        let store: EnrollmentStore
        do {
            store = try EnrollmentStore(stateDirectory: options.stateDirectory) { audit.notice($0) }
        } catch {
            audit.notice("cannot use the state directory \(options.stateDirectory): \(error)")
            return 1
        }
        let reader: FingerprintReader?
        do {
            let linger = options.lingerMsOverride.map { $0 == -1 ? nil : $0 } ?? config.readerLingerMs
            reader = try await FingerprintReader(lingerMs: linger)
        } catch {
            audit.notice("libfprint failed to start (\(error)); serving without biometrics")
            reader = nil
        }
        let daemon = Daemon(reader: reader, store: store, settings: settings, audit: audit)
        let adopted = adoptedSocket()
        let server: Server
        do {
            try makeParentDirectory(of: options.socketPath)
            server = try await Server(daemon: daemon, socketPath: options.socketPath, adoptedFD: adopted, audit: audit)
        } catch {
            audit.notice("cannot listen on \(options.socketPath): \(error)")
            return 1
        }
        let devices = await reader?.devices() ?? []
        audit.info(
            "ready on \(adopted != nil ? "the socket from systemd" : options.socketPath); readers: \(devices.isEmpty ? "none" : devices.map(\.name).joined(separator: ", "))"
        )
        sd_notify(0, "READY=1\nSTATUS=Serving; \(devices.count) reader(s)")

        let stop = AsyncStream.makeStream(of: Int32.self)
        var sources: [DispatchSourceSignal] = []
        for sig in [SIGTERM, SIGINT] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig)
            source.setEventHandler { stop.continuation.yield(sig) }
            source.resume()
            sources.append(source)
        }
        var it = stop.stream.makeAsyncIterator()
        let sig = await it.next() ?? SIGTERM
        sd_notify(0, "STOPPING=1\nSTATUS=Stopping")
        audit.info("stopping on signal \(sig)")
        await server.shutdown()
        await reader?.shutdown()
        if adopted == nil { unlink(options.socketPath) }
        _ = sources
        return 0
    }

    /// `--config FILE` (which must exist), else `/etc/localauthd.conf` when it exists.
    public static func loadConfiguration(_ options: DaemonOptions) throws(DaemonConfiguration.Problem) -> (
        DaemonConfiguration, [String]
    ) {
        try DaemonConfiguration.load(
            path: options.configPath ?? DaemonConfiguration.defaultPath, required: options.configPath != nil)
    }

    /// `--check-config`: prints the warnings and the verdict; 0 when the daemon would start with it.
    public static func checkConfiguration(_ options: DaemonOptions) -> Int32 {
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

    /// The first socket systemd passed (`sd_listen_fds`), nil when not socket-activated.
    static func adoptedSocket() -> Int32? {
        let n = sd_listen_fds(1)
        guard n >= 1 else { return nil }
        let fd = SD_LISTEN_FDS_START
        return sd_is_socket_unix(fd, Int32(SOCK_STREAM.rawValue), 1, nil, 0) > 0 ? fd : nil
    }

    static func makeParentDirectory(of path: String) throws {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return }
        let dir = String(path[..<slash])
        var st = stat()
        if stat(dir, &st) == 0 { return }
        guard mkdir(dir, 0o755) == 0 || errno == EEXIST else {
            throw DaemonOptions.ParseError.badValue(
                "--socket", "cannot create \(dir): \(String(cString: strerror(errno)))")
        }
    }
}
