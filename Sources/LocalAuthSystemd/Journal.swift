// SPDX-License-Identifier: Apache-2.0
import CSystemd
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// Where the daemon's records go: journald's native protocol when stderr is the journal
/// (`JOURNAL_STREAM` names stderr's device and inode, as systemd sets it), plain lines on stderr otherwise.
public enum LogSink: Sendable, Equatable {
    case journal
    case stderr

    /// The journal when `JOURNAL_STREAM` (`DEVICE:INODE`) is the file behind stderr.
    public static func detect(environment value: String? = getenv("JOURNAL_STREAM").map { String(cString: $0) })
        -> LogSink
    {
        guard let value else { return .stderr }
        let parts = value.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return .stderr }
        var st = stat()
        guard fstat(STDERR_FILENO, &st) == 0 else { return .stderr }
        return UInt64(st.st_dev) == device && UInt64(st.st_ino) == inode ? .journal : .stderr
    }
}

/// A swift-log handler for the daemon. Metadata keys are journal field names (`MESSAGE_ID`,
/// `LOCALAUTH_USER`, …): in the journal each becomes a field; on stderr only the message is
/// written, since it already says everything in `key=value` form.
public struct LocalAuthLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    public var logLevel: Logger.Level
    public let sink: LogSink

    public init(sink: LogSink, level: Logger.Level) {
        self.sink = sink
        self.logLevel = level
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields = metadata
        if let extra = event.metadata { fields.merge(extra) { $1 } }
        switch sink {
        case .stderr:
            let text = "localauthd: \(event.message)\n"
            _ = text.withCString { write(STDERR_FILENO, $0, strlen($0)) }
        case .journal:
            Self.send(message: "\(event.message)", priority: Self.priority(event.level), fields: fields)
        }
    }

    /// syslog priorities, as journald stores them.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// A field name journald accepts: A–Z, 0–9 and `_`, not starting with `_` or a digit, at most 64.
    static func isFieldName(_ key: String) -> Bool {
        guard let first = key.utf8.first, first != UInt8(ascii: "_"), !(48...57).contains(first), key.utf8.count <= 64
        else { return false }
        return key.utf8.allSatisfy { (65...90).contains($0) || (48...57).contains($0) || $0 == UInt8(ascii: "_") }
    }

    /// One record through `sd_journal_sendv` (values may hold any byte; libsystemd frames them).
    static func send(message: String, priority: Int, fields: Logger.Metadata) {
        var entries = ["MESSAGE=\(message)", "PRIORITY=\(priority)", "SYSLOG_IDENTIFIER=localauthd"]
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) where isFieldName(key) {
            entries.append("\(key)=\(value)")
        }
        let buffers = entries.map { Array($0.utf8) }
        let pointers: [UnsafeMutableRawPointer] = buffers.map { bytes in
            let p = UnsafeMutableRawPointer.allocate(byteCount: bytes.count, alignment: 1)
            p.copyMemory(from: bytes, byteCount: bytes.count)
            return p
        }
        defer { for p in pointers { p.deallocate() } }
        var vectors = zip(pointers, buffers).map { iovec(iov_base: $0, iov_len: $1.count) }
        let status = sd_journal_sendv(&vectors, Int32(vectors.count))
        if status < 0 {
            // The journal is gone (journald restarting): keep the record on stderr, which is the journal's stream.
            let text = "localauthd: \(message)\n"
            _ = text.withCString { write(STDERR_FILENO, $0, strlen($0)) }
        }
    }
}
