// SPDX-License-Identifier: Apache-2.0
import LocalAuthLocalization

#if canImport(Glibc)
    import Glibc
#endif

/// The daemon's prompt as a desktop notification (the freedesktop notification service on the
/// session bus): an ssh client waits silently for its agent, so the agent says where the person
/// looks. Sent with glib's `gdbus call` (libglib2.0-bin): localauthctl links no D-Bus library.
/// Without a session bus or gdbus, the prompt is on the agent's log only.
struct DesktopNotification {
    /// The notification shown now (its id, to replace and then close it); 0: none.
    private(set) var id: UInt32 = 0
    static let gdbus = "/usr/bin/gdbus"

    static var available: Bool {
        guard let address = getenv("DBUS_SESSION_BUS_ADDRESS"), address.pointee != 0 else { return false }
        return access(gdbus, X_OK) == 0
    }

    /// Shows `body`, replacing what this one showed before.
    mutating func show(summary: String, body: String) {
        guard Self.available else { return }
        let answer = Self.call(
            method: "Notify",
            [
                Self.quoted("localauth"), String(id), Self.quoted(""), Self.quoted(summary),
                Self.quoted(Self.markupEscaped(body)), "[]", "{}", "0",
            ])
        // "(uint32 7,)"
        if let answer, let start = answer.firstIndex(where: \.isNumber) {
            let digits = answer[start...].prefix(while: \.isNumber)
            if let n = UInt32(digits) { id = n }
        }
    }

    /// Takes the notification away (the signature was made or refused).
    mutating func close() {
        guard id != 0, Self.available else { return }
        _ = Self.call(method: "CloseNotification", [String(id)])
        id = 0
    }

    /// GVariant text for a string: double quotes, with `\` and `"` escaped and control characters
    /// as `\uXXXX`.
    static func quoted(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case _ where scalar.value < 0x20 || scalar.value == 0x7f:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// The body may be read as markup (the spec's `body-markup`): `&`, `<`, `>` as entities.
    static func markupEscaped(_ s: String) -> String {
        s.replacingAll("&", "&amp;").replacingAll("<", "&lt;").replacingAll(">", "&gt;")
    }

    /// Runs gdbus (no shell) with a 2-second bus timeout; its standard output, or nil on failure.
    private static func call(method: String, _ arguments: [String]) -> String? {
        let argv =
            [
                "call", "--session", "--timeout", "2", "--dest", "org.freedesktop.Notifications",
                "--object-path", "/org/freedesktop/Notifications", "--method",
                "org.freedesktop.Notifications." + method,
            ] + arguments
        guard let child = ChildProcess.start(gdbus, argv, quiet: true) else { return nil }
        defer { Glibc.close(child.output) }
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 256)
        while output.count < 4096 {
            let n = read(child.output, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            output += buffer[0..<n]
        }
        var status: Int32 = 0
        while waitpid(child.pid, &status, 0) < 0 && errno == EINTR {}
        guard status == 0 else { return nil }
        return String(decoding: output, as: UTF8.self)
    }
}

extension String {
    fileprivate func replacingAll(_ target: Character, _ replacement: String) -> String {
        var out = ""
        for c in self { if c == target { out += replacement } else { out.append(c) } }
        return out
    }
}
