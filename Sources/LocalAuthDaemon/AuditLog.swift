// SPDX-License-Identifier: Apache-2.0
import LocalAuthProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// One structured line per decision, on stderr (the journal when run by systemd).
/// Never carries a passcode or print data: only names, codes and the human message.
public struct AuditLog: Sendable {
    public init() {}

    /// One line per decision: `audit op=… user=… caller_uid=… caller_pid=… [key=value …] result=… message=…`.
    public func decision(
        _ operation: Operation, user: String?, caller: PeerCredentials, result: ResultCode, detail: String,
        fields: [(String, String)] = []
    ) {
        let extra = fields.map { " \($0.0)=\(Self.quoted($0.1))" }.joined()
        write(
            "audit op=\(operation.rawValue) user=\(Self.quoted(user ?? "-")) caller_uid=\(caller.uid) caller_pid=\(caller.pid)\(extra) result=\(result.name) message=\(Self.quoted(detail))"
        )
    }

    /// A change of a user's lockout state, written as it is persisted.
    public func lockout(user: String, _ change: String) {
        write("audit op=lockout user=\(Self.quoted(user)) change=\(Self.quoted(change))")
    }

    /// A client-supplied value as one quoted token: quotes, backslashes and control characters are
    /// escaped, so no value can end the line or forge another one. At most 200 characters.
    static func quoted(_ value: String) -> String {
        var out = "\""
        for scalar in value.unicodeScalars.prefix(200) {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                out += "\\x" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    public func notice(_ message: String) { write("notice: \(message)") }

    public func info(_ message: String) { write(message) }

    private func write(_ line: String) {
        let text = "localauthd: \(line)\n"
        _ = text.withCString { Glibc.write(STDERR_FILENO, $0, strlen($0)) }
    }
}
