// SPDX-License-Identifier: Apache-2.0
import LocalAuthCore
import LocalAuthStore
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// `/etc/localauthd.conf`: `key = value` lines, `#` comments. Bad values refuse the file with its
/// name, line and reason; unknown keys are warned about and ignored. Format and keys: docs/adr/0003-configuration.md.
public struct DaemonConfiguration: Equatable, Sendable {
    public static let defaultPath = "/etc/localauthd.conf"

    public var lockout = LockoutConfig()
    /// How long the reader stays open after its last use; nil: never closed.
    public var readerLingerMs: Int? = 2000
    public var enrollTimeoutMs: Int64 = 60_000
    /// When socket-activated: exit after this many seconds with no connection; 0: never.
    public var idleExitSeconds = 0
    /// The least severe record written; audit decisions are `info`, refusals `notice`.
    public var logLevel = Logger.Level.info
    /// libfprint drivers of readers that are not built into the machine (a USB reader on the desk):
    /// they stay usable while a laptop's lid is closed. Every other reader is built in.
    public var externalReaderDrivers: Set<String> = []
    /// Where the key that seals prints and rights comes from (docs/adr/0006-sealing.md).
    public var sealing = SealingConfiguration()
    /// Serve fprintd's D-Bus API (`net.reactivated.Fprint`) on the system bus too.
    public var fprintdCompat = false
    /// libfprint's virtual device as the reader, driven by root's `localauthctl simulate` (as
    /// `--virtual-reader`): for a test system, set in a drop-in rather than on the unit's command line.
    public var virtualReader = false
    /// Where fprintd kept its prints: imported at first start and by `localauthctl import-fprintd`.
    public var fprintdStateDir = FprintdImport.defaultRoot
    /// Whether the configuration names `fprintd-state-dir` (see `Daemon.importsFprintdPrintsAtFirstStart`).
    public var fprintdStateDirGiven = false
    /// One account's evaluations hold the reader at most this long in any window of twice as long;
    /// then the reader is the others' (issue 13, M1).
    public var readerShareMs: Int64 = 60_000
    /// When the password is required instead of a finger (docs/policy.md, rows R).
    public var passwordRules = PasswordRules()

    public init() {}

    /// A line the daemon refuses to start with.
    public struct Problem: Error, Equatable, Sendable, CustomStringConvertible {
        public var file: String
        public var line: Int
        public var reason: String
        public var description: String { line > 0 ? "\(file):\(line): \(reason)" : "\(file): \(reason)" }
    }

    /// The keys, each with the one place that reads its value.
    private static let keys: [String: @Sendable (inout DaemonConfiguration, String) throws(ValueError) -> Void] = [
        "finger-attempts": { c, v throws(ValueError) in c.lockout.fingerAttempts = try integer(v, 1...20) },
        "passcode-attempts": { c, v throws(ValueError) in c.lockout.passcodeAttempts = try integer(v, 1...20) },
        "passcode-delays": { c, v throws(ValueError) in c.lockout.passcodeDelays = try delays(v) },
        "max-reuse-seconds": { c, v throws(ValueError) in c.lockout.maxReuseSeconds = Int64(try integer(v, 0...300)) },
        "reader-linger-ms": { c, v throws(ValueError) in
            let ms = try integer(v, -1...600_000)
            c.readerLingerMs = ms == -1 ? nil : ms
        },
        "enroll-timeout-seconds": { c, v throws(ValueError) in
            c.enrollTimeoutMs = Int64(try integer(v, 10...600)) * 1000
        },
        "idle-exit-seconds": { c, v throws(ValueError) in c.idleExitSeconds = try integer(v, 0...86_400) },
        "log-level": { c, v throws(ValueError) in c.logLevel = try level(v) },
        "external-reader-drivers": { c, v throws(ValueError) in c.externalReaderDrivers = try drivers(v) },
        "sealing": { c, v throws(ValueError) in
            guard let method = SealingConfiguration.Method(rawValue: v) else {
                throw ValueError(reason: "'\(v)' is not one of auto, tpm2, key-file")
            }
            c.sealing.method = method
        },
        "sealing-key-file": { c, v throws(ValueError) in
            guard v.hasPrefix("/"), !v.hasSuffix("/"), v.utf8.count <= 4096 else {
                throw ValueError(reason: "'\(v)' is not an absolute file path")
            }
            c.sealing.keyFile = v
        },
        "tpm2-device": { c, v throws(ValueError) in
            guard !v.isEmpty, v.utf8.count <= 1024, v.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7f })
            else { throw ValueError(reason: "'\(v)' is not a TCTI (e.g. device:/dev/tpmrm0)") }
            c.sealing.tpm2Device = v
        },
        "fprintd-compat": { c, v throws(ValueError) in c.fprintdCompat = try yesNo(v) },
        "virtual-reader": { c, v throws(ValueError) in c.virtualReader = try yesNo(v) },
        "fprintd-state-dir": { c, v throws(ValueError) in
            guard v.hasPrefix("/"), !v.contains("\0") else {
                throw ValueError(reason: "'\(v)' is not an absolute path")
            }
            c.fprintdStateDir = v
            c.fprintdStateDirGiven = true
        },
        "reader-share-seconds": { c, v throws(ValueError) in c.readerShareMs = Int64(try integer(v, 5...3600)) * 1000 },
        "password-after-restart": { c, v throws(ValueError) in c.passwordRules.afterRestart = try yesNo(v) },
        "password-max-age": { c, v throws(ValueError) in c.passwordRules.maxAgeMs = try age(v, orOff: true) },
        "password-idle-max-age": { c, v throws(ValueError) in c.passwordRules.idlePasswordMs = try age(v, orOff: true)
        },
        "finger-idle-max-age": { c, v throws(ValueError) in c.passwordRules.idleFingerMs = try age(v, orOff: false)! },
        "password-for-first-session": { c, v throws(ValueError) in c.passwordRules.forFirstSession = try yesNo(v) },
    ]

    struct ValueError: Error { var reason: String }

    /// Parses a whole file's text over `base` (a key it sets replaces the value `base` has);
    /// returns the configuration and the warnings (unknown keys).
    public static func parse(_ text: String, file: String, over base: DaemonConfiguration = DaemonConfiguration())
        throws(Problem) -> (DaemonConfiguration, [String])
    {
        var config = base
        var warnings: [String] = []
        var seen = Set<String>()
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let content = line.trimmed
            if content.isEmpty { continue }
            let parts = content.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { throw Problem(file: file, line: number, reason: "expected 'key = value'") }
            let key = parts[0].trimmed
            let value = parts[1].trimmed
            guard let apply = keys[key] else {
                warnings.append("\(file):\(number): unknown key '\(key)' ignored")
                continue
            }
            guard seen.insert(key).inserted else {
                throw Problem(file: file, line: number, reason: "'\(key)' is set twice")
            }
            guard !value.isEmpty else { throw Problem(file: file, line: number, reason: "'\(key)' has no value") }
            do {
                try apply(&config, value)
            } catch {
                throw Problem(file: file, line: number, reason: "\(key): \(error.reason)")
            }
        }
        return (config, warnings)
    }

    /// The drop-in directories read after the default file: the packages' (`localauth-fprintd-compat`
    /// turns fprintd's API on there), then the administrator's, whose file of the same name masks
    /// the packages' (an empty file, or a link to /dev/null, turns it off).
    public static let dropInDirectories = ["/usr/lib/localauthd.conf.d", "/etc/localauthd.conf.d"]

    /// Reads `path`, then every `*.conf` file of `dropInDirectories`, by file name across them, each
    /// over what came before; a name in a later directory masks the same name in an earlier one. A
    /// missing file or directory is a problem only for `path` when `required`.
    public static func load(path: String, required: Bool, dropInDirectories: [String]) throws(Problem) -> (
        DaemonConfiguration, [String]
    ) {
        var (config, warnings) = try load(path: path, required: required)
        var files: [String: String] = [:]
        for directory in dropInDirectories {
            guard let dir = opendir(directory) else {
                let e = errno
                if e == ENOENT || e == ENOTDIR { continue }
                throw Problem(file: directory, line: 0, reason: String(cString: strerror(e)))
            }
            defer { closedir(dir) }
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) {
                    String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
                }
                guard name.hasSuffix(".conf"), !name.hasPrefix(".") else { continue }
                files[name] = directory + "/" + name
            }
        }
        for name in files.keys.sorted() {
            let (next, more) = try load(path: files[name]!, required: true, over: config)
            config = next
            warnings += more
        }
        return (config, warnings)
    }

    /// Reads and parses `path` over `base`. A missing file is a problem only when `required`.
    public static func load(path: String, required: Bool, over base: DaemonConfiguration = DaemonConfiguration())
        throws(Problem) -> (DaemonConfiguration, [String])
    {
        guard let file = fopen(path, "r") else {
            let e = errno
            if e == ENOENT && !required { return (base, []) }
            throw Problem(file: path, line: 0, reason: String(cString: strerror(e)))
        }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = fread(&buffer, 1, buffer.count, file)
            if n == 0 { break }
            bytes += buffer[0..<n]
            guard bytes.count <= 65_536 else { throw Problem(file: path, line: 0, reason: "larger than 64 KiB") }
        }
        guard ferror(file) == 0 else { throw Problem(file: path, line: 0, reason: String(cString: strerror(errno))) }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw Problem(file: path, line: 0, reason: "not UTF-8 text")
        }
        return try parse(text, file: path, over: base)
    }

    static func integer(_ value: String, _ range: ClosedRange<Int>) throws(ValueError) -> Int {
        guard let n = Int(value), range.contains(n) else {
            throw ValueError(reason: "'\(value)' is not a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return n
    }

    /// `yes` or `no`.
    static func yesNo(_ value: String) throws(ValueError) -> Bool {
        switch value {
        case "yes": return true
        case "no": return false
        default: throw ValueError(reason: "'\(value)' is not yes or no")
        }
    }

    /// swift-log's level names, as journalctl shows them: `trace` … `critical`.
    static func level(_ value: String) throws(ValueError) -> Logger.Level {
        guard let level = Logger.Level(rawValue: value) else {
            let names = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
            throw ValueError(reason: "'\(value)' is not one of \(names)")
        }
        return level
    }

    /// `synaptics, elanmoc`: libfprint driver names (lowercase letters, digits, `_` and `-`), comma-separated.
    static func drivers(_ value: String) throws(ValueError) -> Set<String> {
        var out = Set<String>()
        for item in value.split(separator: ",", omittingEmptySubsequences: false) {
            let name = item.trimmed
            guard !name.isEmpty, name.count <= 64,
                name.unicodeScalars.allSatisfy({
                    ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "-"
                })
            else {
                throw ValueError(
                    reason: "'\(item.trimmed)' is not a libfprint driver name (lowercase letters, digits, _ and -)")
            }
            out.insert(String(name))
        }
        return out
    }

    /// Seconds in `word`: a whole number of seconds, or with an s, m, h or d suffix; nil when it is
    /// not one, or not within `1...maxSeconds`.
    static func seconds(_ word: String, maxSeconds: Int64) -> Int64? {
        var digits = word
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        var unit: Int64 = 1
        if let last = digits.last, let u = units[last] {
            unit = u
            digits.removeLast()
        }
        guard let n = Int64(digits), n > 0, n <= maxSeconds / unit else { return nil }
        return n * unit
    }

    /// `48h`, `7d`, `90m`: 1 minute to 365 days, in milliseconds; `off` (nil) when `orOff`.
    static func age(_ value: String, orOff: Bool) throws(ValueError) -> Int64? {
        if orOff && value == "off" { return nil }
        guard let s = seconds(value, maxSeconds: 365 * 86_400), s >= 60 else {
            throw ValueError(reason: "'\(value)' is not a time from 1m to 365d\(orOff ? ", or off" : "")")
        }
        return s * 1000
    }

    /// `60, 5m, 15m, 1h`: seconds, or with an s, m or h suffix; at most 10, each 1 s to 24 h, never decreasing.
    static func delays(_ value: String) throws(ValueError) -> [Int64] {
        var out: [Int64] = []
        for item in value.split(separator: ",") {
            guard item.trimmed.last != "d", let seconds = seconds(item.trimmed, maxSeconds: 86_400) else {
                throw ValueError(reason: "'\(item.trimmed)' is not a delay from 1s to 24h")
            }
            guard (out.last ?? 0) <= seconds else { throw ValueError(reason: "delays must not decrease") }
            out.append(seconds)
        }
        guard (1...10).contains(out.count) else { throw ValueError(reason: "give 1 to 10 delays, separated by commas") }
        return out
    }
}

extension Substring {
    fileprivate var trimmed: String {
        String(
            drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed().drop { $0 == " " || $0 == "\t" || $0 == "\r" }
                .reversed())
    }
}
