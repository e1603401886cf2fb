// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
    import Glibc
#endif

/// The daemon's command line: `localauthd --socket PATH --state-dir DIR [--config FILE] [--virtual-reader]`.
public struct DaemonOptions: Sendable, Equatable {
    public var socketPath = "/run/localauthd/socket"
    public var stateDirectory = DaemonOptions.systemStateDirectory
    /// The system instance's state directory (systemd's `StateDirectory=localauthd`).
    public static let systemStateDirectory = "/var/lib/localauthd"
    public var configPath: String?
    public var virtualReader = false
    /// `--linger-ms`, overriding the configuration; -1: never close.
    public var lingerMsOverride: Int?
    /// `--check-config`: validate the configuration and exit.
    public var checkConfig = false
    /// `--connection-idle-ms`: close a connection with no request running after this long (for
    /// tests; the default is `Server.Limits().idleTimeoutMs`, 30 s).
    public var connectionIdleMsOverride: Int64?
    /// `--fprintd-compat`: serve fprintd's D-Bus API too (also `fprintd-compat = yes`).
    public var fprintdCompat = false
    /// Whether `--socket` / `--state-dir` were given: when not, systemd's (or a test's)
    /// `RUNTIME_DIRECTORY` / `STATE_DIRECTORY` choose them.
    public var socketGiven = false
    public var stateDirectoryGiven = false

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
          --connection-idle-ms N
                             close a connection that runs no request after N ms (default 30000)
          --fprintd-compat   also serve fprintd's D-Bus API (net.reactivated.Fprint) on the system bus
        Without --socket and --state-dir, RUNTIME_DIRECTORY/socket and the first STATE_DIRECTORY entry
        are used when systemd (or a test) sets them.
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
                socketGiven = true
            case "--state-dir":
                stateDirectory = try value(a)
                guard stateDirectory.hasPrefix("/") else { throw .badValue(a, stateDirectory) }
                stateDirectoryGiven = true
            case "--fprintd-compat": fprintdCompat = true
            case "--config": configPath = try value(a)
            case "--virtual-reader": virtualReader = true
            case "--check-config": checkConfig = true
            case "--linger-ms":
                let v = try value(a)
                guard let n = Int(v), n >= -1 else { throw .badValue(a, v) }
                lingerMsOverride = n
            case "--connection-idle-ms":
                let v = try value(a)
                guard let n = Int64(v), n >= 1 else { throw .badValue(a, v) }
                connectionIdleMsOverride = n
            default: throw .unknown(a)
            }
            i += 1
        }
    }
}

extension DaemonOptions {
    /// The options with systemd's directories filled in where the command line gave none: the first
    /// entry of `STATE_DIRECTORY` for `--state-dir`, `RUNTIME_DIRECTORY/socket` for `--socket`
    /// (systemd's `StateDirectory=` / `RuntimeDirectory=`, and fprintd's test suite, set them).
    public func withSystemdDirectories(
        environment: (String) -> String? = { getenv($0).map { String(cString: $0) } }
    ) -> DaemonOptions {
        var options = self
        func first(_ name: String) -> String? {
            guard let value = environment(name), let entry = value.split(separator: ":").first,
                entry.hasPrefix("/")
            else { return nil }
            return String(entry)
        }
        if !stateDirectoryGiven, let state = first("STATE_DIRECTORY") { options.stateDirectory = state }
        if !socketGiven, let run = first("RUNTIME_DIRECTORY"), (run + "/socket").utf8.count < 108 {
            options.socketPath = run + "/socket"
        }
        return options
    }
}
