// SPDX-License-Identifier: Apache-2.0
import LocalAuthProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// One structured line per decision, on stderr (the journal when run by systemd).
/// Never carries a passcode or print data: only names, codes and the human message.
public struct AuditLog: Sendable {
    public init() {}

    public func decision(
        _ operation: Operation, user: String?, caller: PeerCredentials, result: ResultCode, detail: String
    ) {
        write(
            "audit op=\(operation.rawValue) user=\(user ?? "-") caller_uid=\(caller.uid) caller_pid=\(caller.pid) result=\(result.name) message=\"\(detail)\""
        )
    }

    public func notice(_ message: String) { write("notice: \(message)") }

    public func info(_ message: String) { write(message) }

    private func write(_ line: String) {
        let text = "localauthd: \(line)\n"
        _ = text.withCString { Glibc.write(STDERR_FILENO, $0, strlen($0)) }
    }
}
