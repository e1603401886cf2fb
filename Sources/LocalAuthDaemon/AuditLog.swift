// SPDX-License-Identifier: Apache-2.0
import LocalAuthProtocol
import LocalAuthSystemd
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// One structured record per decision, through swift-log: in the journal (fields `MESSAGE_ID`,
/// `LOCALAUTH_USER`, `LOCALAUTH_SERVICE`, `LOCALAUTH_RESULT`, `LOCALAUTH_CALLER_UID`,
/// `LOCALAUTH_CALLER_PROGRAM`, …) when
/// stderr is the journal, else one line on stderr. Never carries a passcode or print data: only
/// names, codes and the human message.
public struct AuditLog: Sendable {
    public let logger: Logger

    /// Records at `level` and above, to the journal when stderr is the journal (`sink` overrides).
    public init(level: Logger.Level = .info, sink: LogSink = .detect()) {
        var logger = Logger(label: "localauthd") { _ in LocalAuthLogHandler(sink: sink, level: level) }
        logger.logLevel = level
        self.logger = logger
    }

    /// The journal's `MESSAGE_ID` of each kind of record: fixed, so `journalctl MESSAGE_ID=…` finds them.
    public static let messageIDs: [String: String] = [
        "status": "6b84c236344f4ff587c2f94dc36756fe",
        "canEvaluate": "05bf168a61e843479b0c7f0a69718fed",
        "evaluate": "507d44f6ba20425fb2e87165eff5ff51",
        "enroll": "e8c3f3b63f7545b2b6a4c55fd2409691",
        "list": "c89ed3f9a5f74efda62de82493e2d42c",
        "delete": "8187c4da8d2343c4acf051053ccefa95",
        "devices": "c7e398d5bc7849f3bd2db4f3ade36dae",
        "simulate": "5c576dce84e7478da9defff48c42b093",
        "passcodeSet": "3933d89789564958841e6d1046a7a989",
        "passcodeRemove": "bd3c1e09ec7a4e14b3d02697958d86ce",
        "lockoutReset": "e0b94baaf4f7405a9754ad0b425d3e3f",
        "passwordUsed": "393e7726c481468a9ab020c1df9be624",
        "importFprintd": "6f2a9f3cbb8e4d0e9c41b7d25a1e8f07",
        "claimReader": "e95bba61d79b48bfb04f89eeee1e3c89",
        "releaseReader": "5581fff361414bdabe496144c97fb694",
        "lockout": "e136a5c682a14b56adaea1fdf2f10cc2",
        "lifecycle": "c798909507b444cda2a8fe8dffc53862",
        "notice": "83d5376377214d788d04d9928ee674c4",
    ]

    /// One record per decision: `audit op=… user=… caller_uid=… caller_pid=… [caller_real_uid=…]
    /// [caller_program=…] [key=value …] result=… [phrase=…] message=…`.
    public func decision(
        _ operation: Operation, user: String?, caller: PeerCredentials, result: ResultCode, detail: String,
        fields: [(String, String)] = [], phrase: String? = nil
    ) {
        // A setuid caller (su, sudo, polkit's helper) is named by who ran it too.
        let real =
            caller.uid == 0 && caller.realUID != 0
            ? " caller_real_uid=\(caller.realUID.map(String.init) ?? "unknown")" : ""
        // The calling program as the daemon read it at accept (its executable; never what the client
        // says): a record names who asked, not only a pid that may since be another process's.
        let program = caller.process.map(Whereabouts.processName)
        let extra =
            real + (program.map { " caller_program=\(Self.quoted($0))" } ?? "")
            + fields.map { " \($0.0)=\(Self.quoted($0.1))" }.joined()
        var metadata: Logger.Metadata = [
            "MESSAGE_ID": "\(Self.messageIDs[operation.rawValue] ?? Self.messageIDs["notice"]!)",
            "LOCALAUTH_OPERATION": "\(operation.rawValue)",
            "LOCALAUTH_USER": "\(String((user ?? "-").prefix(200)))",
            "LOCALAUTH_CALLER_UID": "\(caller.uid)",
            "LOCALAUTH_CALLER_PID": "\(caller.pid)",
            "LOCALAUTH_CALLER_REAL_UID": "\(caller.realUID.map(String.init) ?? "unknown")",
            "LOCALAUTH_RESULT": "\(result.name)",
        ]
        if let program { metadata["LOCALAUTH_CALLER_PROGRAM"] = "\(program)" }
        // The English line's identifier (docs/protocol.md, "Phrases"): what a client rendered.
        if let phrase { metadata["LOCALAUTH_PHRASE"] = "\(phrase)" }
        for (key, value) in fields {
            metadata["LOCALAUTH_" + key.uppercased().map { $0.isLetter || $0.isNumber ? String($0) : "_" }.joined()] =
                "\(String(value.prefix(200)))"
        }
        logger.log(
            level: result == .success ? .info : .notice,
            "audit op=\(operation.rawValue) user=\(Self.quoted(user ?? "-")) caller_uid=\(caller.uid) caller_pid=\(caller.pid)\(extra) result=\(result.name)\(phrase.map { " phrase=\($0)" } ?? "") message=\(Self.quoted(detail))",
            metadata: metadata)
    }

    /// A change of a user's lockout state, written as it is persisted.
    public func lockout(user: String, _ change: String) {
        logger.notice(
            "audit op=lockout user=\(Self.quoted(user)) change=\(Self.quoted(change))",
            metadata: [
                "MESSAGE_ID": "\(Self.messageIDs["lockout"]!)", "LOCALAUTH_OPERATION": "lockout",
                "LOCALAUTH_USER": "\(user)", "LOCALAUTH_CHANGE": "\(change)",
            ])
    }

    /// A client-supplied value as one quoted token: quotes, backslashes and control characters are
    /// escaped, so no value can end the line or forge another one. At most 200 characters, a cut
    /// marked with "…".
    static func quoted(_ value: String) -> String {
        "\"" + Echo.escaped(value, quote: "\"", limit: 200) + "\""
    }

    public func notice(_ message: String) {
        logger.notice("notice: \(message)", metadata: ["MESSAGE_ID": "\(Self.messageIDs["notice"]!)"])
    }

    /// The daemon cannot do its job at all (it cannot start): the one line an administrator must read.
    public func error(_ message: String) {
        logger.error("\(message)", metadata: ["MESSAGE_ID": "\(Self.messageIDs["lifecycle"]!)"])
    }

    public func info(_ message: String) {
        logger.info("\(message)", metadata: ["MESSAGE_ID": "\(Self.messageIDs["lifecycle"]!)"])
    }

    public func debug(_ message: String) { logger.debug("\(message)") }
}

/// The systemd glue (logind) reports through the audit log.
extension AuditLog: NoticeLog {}
