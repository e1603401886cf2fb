// SPDX-License-Identifier: Apache-2.0
import CSystemd

#if canImport(Glibc)
    import Glibc
#endif

/// logind's view of a request, looked up once per request.
public struct CallerSession: Sendable, Equatable {
    /// The login session, else the terminal and uid: a reuse window never crosses it.
    public let key: String
    /// Biometrics are refused for a remote session (ssh, polkit's agent over ssh).
    public let isRemote: Bool
    /// The laptop's lid is closed (asked only when the reader is built in).
    public let lidClosed: Bool
}

/// Where a caller sits: its login session (sd-login's files, else logind over the bus) and the lid.
public struct LoginSessions: Sendable {
    /// logind over D-Bus: sessions sd-login cannot place, the lid. Nil: files and the ACPI lid only.
    let logind: Logind?

    public init(logind: Logind?) { self.logind = logind }

    /// The caller's session: sd-login's files first (`sd_pid_get_session`, no round trip); when they
    /// place the caller in no session (a container, a process outside logind's cgroups), logind's
    /// `GetSessionByPID`. With `askLid`, logind's `LidClosed`, else the ACPI lid button. At most one
    /// round trip to the bus for both.
    public nonisolated(nonsending) func view(of pid: Int32, uid: UInt32, tty: String?, askLid: Bool) async
        -> CallerSession
    {
        var fromFiles: (key: String, isRemote: Bool)?
        var name: UnsafeMutablePointer<CChar>?
        if sd_pid_get_session(pid_t(pid), &name) >= 0, let name {
            fromFiles = ("session:" + String(cString: name), sd_session_is_remote(name) > 0)
            free(name)
        }
        let asked =
            fromFiles == nil || askLid
            ? await logind?.ask(sessionOf: fromFiles == nil ? pid : nil, lid: askLid) : nil
        let lidClosed = askLid && (asked?.lidClosed ?? LidSwitch.closed())
        if let fromFiles {
            return CallerSession(key: fromFiles.key, isRemote: fromFiles.isRemote, lidClosed: lidClosed)
        }
        if let found = asked?.session {
            return CallerSession(key: "session:" + found.path, isRemote: found.isRemote, lidClosed: lidClosed)
        }
        return CallerSession(key: "tty:\(tty ?? "none"):uid:\(uid)", isRemote: false, lidClosed: lidClosed)
    }
}
