// SPDX-License-Identifier: Apache-2.0

import LocalAuthProtocol

/// A logind session, as far as the presence rule and the password report's rule need it.
public struct SessionFacts: Sendable, Equatable {
    /// The account that owns the session (nil: its uid has no name).
    public var owner: String?
    /// The uid that owns the session (nil: not known).
    public var ownerUID: UInt32?
    /// logind's class: "user", "greeter", "lock-screen", "background", …
    public var sessionClass: String
    /// The seat it sits on; nil for a session without one (ssh, a cron job's session).
    public var seat: String?
    /// logind's `Active`: the session in front on its seat.
    public var isActive: Bool
    public var isRemote: Bool

    public init(
        owner: String?, ownerUID: UInt32? = nil, sessionClass: String = "user", seat: String?, isActive: Bool,
        isRemote: Bool = false
    ) {
        self.owner = owner
        self.ownerUID = ownerUID
        self.sessionClass = sessionClass
        self.seat = seat
        self.isActive = isActive
        self.isRemote = isRemote
    }
}

/// Where a request comes from: the facts the presence rule decides on, gathered by the daemon from
/// the kernel (`SO_PEERCRED`, the caller's `/proc` entry) and logind, never from the client.
public struct RequestOrigin: Sendable, Equatable {
    /// The caller's effective uid (`SO_PEERCRED`).
    public var uid: UInt32
    /// The account name of `uid`.
    public var name: String?
    /// The real uid of the calling process (`su`, `sudo`, polkit's helper: the invoking user); nil
    /// when it could not be read.
    public var realUID: UInt32?
    /// The account name of `realUID`.
    public var realName: String?
    /// The caller's logind session; nil when it is in none, or when there is no logind.
    public var session: SessionFacts?
    /// logind answers on this machine (sd-login's files, or `org.freedesktop.login1` on the bus).
    public var logindPresent: Bool
    /// The caller's controlling terminal is the virtual terminal in front (`/sys/class/tty/tty0/active`).
    public var onForegroundVT: Bool
    /// For a caller in no session: the requester has a local session that is the active one on a
    /// seat (`sd_uid_get_seats(uid, 1, …)`).
    public var requesterActiveOnASeat: Bool
    /// The process that opened the connection has exited: its pid may name another process now.
    public var connectionOrphaned: Bool

    public init(
        uid: UInt32, name: String?, realUID: UInt32?, realName: String? = nil, session: SessionFacts? = nil,
        logindPresent: Bool = true, onForegroundVT: Bool = false, requesterActiveOnASeat: Bool = false,
        connectionOrphaned: Bool = false
    ) {
        self.uid = uid
        self.name = name
        self.realUID = realUID
        self.realName = realName
        self.session = session
        self.logindPresent = logindPresent
        self.onForegroundVT = onForegroundVT
        self.requesterActiveOnASeat = requesterActiveOnASeat
        self.connectionOrphaned = connectionOrphaned
    }
}

/// Whether biometrics may be offered to a request: **a finger only ever answers the person who is
/// at the reader and asked.** Decided before the target's state is read, so a refusal says nothing
/// about the target (whether it has fingers, which, whether it is locked, whether a passcode is set)
/// and counts no touch against it.
public enum Presence {
    public enum Verdict: Sendable, Equatable {
        /// Biometrics may be offered; `requester` is the account that asked (nil: root at the
        /// foreground VT or a greeter, where the person types their own name).
        case offered(requester: String?)
        case refused(ReaderUnavailable)
    }

    /// The rule of docs/security.md ("Who may be asked for a finger"), for a request about `target`.
    public static func decide(_ origin: RequestOrigin, target: String) -> Verdict {
        if origin.connectionOrphaned { return .refused(.connectionOrphaned) }
        // Who asked: the caller; for a root caller the real uid of its process (su, sudo, polkit's
        // helper are setuid: their real uid is the invoking user); for a process whose real uid is
        // 0 too (login, a greeter's worker, root's own tools), the owner of its login session.
        let requester: String?
        var mayNameAnyone = false
        if origin.uid != 0 {
            requester = origin.name
        } else if let real = origin.realUID, real != 0 {
            requester = origin.realName
        } else if origin.realUID == nil {
            return .refused(.requesterUnknown)
        } else if let session = origin.session {
            requester = session.owner
            // At a greeter the person types their own name: it asks for whoever that is.
            mayNameAnyone = session.sessionClass == "greeter"
        } else {
            // Root with no session: `login` on a virtual terminal before pam_systemd, where the person
            // types their own name; any other (cron, a system service) has nobody at the reader.
            return origin.onForegroundVT ? .offered(requester: nil) : .refused(.noLoginSession)
        }
        // (A) The requester is the target account.
        if !mayNameAnyone {
            guard let requester, requester == target else { return .refused(.notTheTargetsSession(target)) }
        }
        // (B) From a local session that is the active one on its seat.
        if let session = origin.session {
            if session.isRemote { return .refused(.remoteSession) }
            guard session.seat != nil, session.isActive else { return .refused(.sessionNotInFront(target)) }
            return .offered(requester: mayNameAnyone ? nil : requester)
        }
        // A caller in no session whose requester is a user (a user service, an app the user manager
        // started): when logind can say, the requester must be the one in front on a seat; without
        // logind nothing can, and (A) alone stands (docs/security.md says why).
        if origin.logindPresent, !origin.requesterActiveOnASeat { return .refused(.sessionNotInFront(target)) }
        return .offered(requester: requester)
    }
}
