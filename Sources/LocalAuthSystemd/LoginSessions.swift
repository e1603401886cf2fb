// SPDX-License-Identifier: Apache-2.0
import CSystemd

#if canImport(Glibc)
    import Glibc
#endif

/// A logind session: who owns it, what kind it is, and whether it is the one in front on its seat.
public struct LoginSession: Sendable, Equatable {
    public let id: String
    public let ownerUID: UInt32
    /// logind's class: "user", "greeter", "lock-screen", "background", …
    public let sessionClass: String
    /// nil for a session without a seat (ssh, cron).
    public let seat: String?
    public let isActive: Bool
    public let isRemote: Bool
}

/// logind's view of a request, looked up once per request.
public struct CallerSession: Sendable, Equatable {
    /// The login session and the terminal, else the terminal and uid: a reuse window never crosses it.
    public let key: String
    /// The caller's session; nil when it is in none (or there is no logind).
    public let session: LoginSession?
    /// logind answered: sd-login's files placed the caller, or `GetSessionByPID` answered (a
    /// session, or "no session for this pid").
    public let logindPresent: Bool
    /// The laptop's lid is closed (asked only when the reader is built in).
    public let lidClosed: Bool

    /// Biometrics are refused for a remote session (ssh, polkit's agent over ssh).
    public var isRemote: Bool { session?.isRemote ?? false }
}

/// Where a caller sits: its login session (sd-login's files, else logind over the bus) and the lid.
public struct LoginSessions: Sendable {
    /// logind over D-Bus: sessions sd-login cannot place, the lid. Nil: files and the ACPI lid only.
    let logind: Logind?

    public init(logind: Logind?) { self.logind = logind }

    /// The caller's session: sd-login's files first (`sd_pid_get_session`, no round trip). When
    /// systemd runs the machine and logind runs, the files are logind's answer either way: a session,
    /// or none (logind places a process by the same cgroup). Only when they cannot say (no systemd,
    /// no logind, a session file missing) is logind asked over the bus (`GetSessionByPID`). With
    /// `askLid`, logind's `LidClosed`, else the ACPI lid button. At most one visit to the bus for both.
    public nonisolated(nonsending) func view(of pid: Int32, uid: UInt32, tty: String?, askLid: Bool) async
        -> CallerSession
    {
        let fromFiles = Self.sessionFromFiles(of: pid)
        let placed = fromFiles != .unknown
        let asked =
            !placed || askLid ? await logind?.ask(sessionOf: placed ? nil : pid, uid: uid, lid: askLid) : nil
        let lidClosed = askLid && (asked?.lidClosed ?? LidSwitch.closed())
        switch fromFiles {
        case .found(let session):
            return CallerSession(
                key: "session:\(session.id):tty:\(tty ?? "none")", session: session, logindPresent: true,
                lidClosed: lidClosed)
        case .none:
            return CallerSession(
                key: "tty:\(tty ?? "none"):uid:\(uid)", session: nil, logindPresent: true, lidClosed: lidClosed)
        case .unknown:
            break
        }
        switch asked?.session {
        case .found(let session)?:
            return CallerSession(
                key: "session:\(session.id):tty:\(tty ?? "none")", session: session, logindPresent: true,
                lidClosed: lidClosed)
        case .none?:
            return CallerSession(
                key: "tty:\(tty ?? "none"):uid:\(uid)", session: nil, logindPresent: true, lidClosed: lidClosed)
        case .unknown?, nil:
            return CallerSession(
                key: "tty:\(tty ?? "none"):uid:\(uid)", session: nil, logindPresent: false, lidClosed: lidClosed)
        }
    }

    /// The laptop's lid alone: logind's `LidClosed`, else the ACPI lid button (false without a lid).
    public nonisolated(nonsending) func lidClosed() async -> Bool {
        await logind?.ask(sessionOf: nil, uid: 0, lid: true).lidClosed ?? LidSwitch.closed()
    }

    /// Whether `uid` has a local session (one with a seat) — false for a login that would start the
    /// user's first session: sd-login's files when systemd runs the machine and logind runs
    /// (`sd_uid_get_seats(uid, 0, …)`), else logind's `ListSessions`; nil when neither can say.
    public nonisolated(nonsending) func hasLocalSession(uid: UInt32) async -> Bool? {
        if Self.logindRuns() {
            var seats: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
            let n = sd_uid_get_seats(uid_t(uid), 0, &seats)
            if let seats {
                for i in 0..<Int(max(n, 0)) { free(seats[i]) }
                free(seats)
            }
            if n >= 0 { return n > 0 }
        }
        return await logind?.seatSessionCount(uid: uid).map { $0 > 0 }
    }

    /// True when `uid` has a local session that is the active one on some seat: sd-login's files
    /// (`sd_uid_get_seats(uid, 1, …)`), which are logind's answer when it runs (it writes them);
    /// else logind's sessions over the bus.
    public nonisolated(nonsending) func isActiveOnASeat(uid: UInt32) async -> Bool {
        var seats: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        let n = sd_uid_get_seats(uid_t(uid), 1, &seats)
        if let seats {
            for i in 0..<Int(max(n, 0)) { free(seats[i]) }
            free(seats)
        }
        if n > 0 { return true }
        if n == 0, Self.logindRuns() { return false }
        return await logind?.hasActiveSeatSession(uid: uid) ?? false
    }

    /// systemd runs the machine and logind runs: `sd_booted()` and logind's `/run/systemd/seats/`
    /// (systemd's own test, `logind_running()`). Then sd-login's files are logind's answers.
    static func logindRuns() -> Bool {
        sd_booted() > 0 && access("/run/systemd/seats/", F_OK) == 0
    }

    /// What sd-login's files say of a process.
    enum FilesAnswer: Equatable {
        /// It is in this session.
        case found(LoginSession)
        /// It is in no session's scope, and logind runs: `GetSessionByPID` would say the same
        /// (`NoSessionForPID`), for logind finds a process's session by its cgroup too.
        case none
        /// The files cannot say: systemd does not run the machine or logind does not run, the
        /// process is gone, or its session's file is missing.
        case unknown
    }

    /// The caller's session from sd-login's files (`/proc/PID/cgroup`, `/run/systemd/sessions`).
    static func sessionFromFiles(of pid: Int32) -> FilesAnswer {
        var name: UnsafeMutablePointer<CChar>?
        let r = sd_pid_get_session(pid_t(pid), &name)
        guard r >= 0, let name else {
            // -ENODATA: the process's cgroup is no session's scope.
            return r == -ENODATA && logindRuns() ? .none : .unknown
        }
        defer { free(name) }
        var owner: uid_t = 0
        guard sd_session_get_uid(name, &owner) >= 0 else { return .unknown }
        return .found(
            LoginSession(
                id: String(cString: name), ownerUID: owner,
                sessionClass: takeString { sd_session_get_class(name, &$0) } ?? "",
                seat: takeString { sd_session_get_seat(name, &$0) }, isActive: sd_session_is_active(name) > 0,
                isRemote: sd_session_is_remote(name) > 0))
    }

    /// A string sd-login allocates (freed here), or nil when the call fails or gives none.
    private static func takeString(_ call: (inout UnsafeMutablePointer<CChar>?) -> Int32) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard call(&value) >= 0, let value else { return nil }
        defer { free(value) }
        let text = String(cString: value)
        return text.isEmpty ? nil : text
    }
}
