// SPDX-License-Identifier: Apache-2.0
import LocalAuthProtocol

/// Who may tell the daemon "this account's password just succeeded" (PASSWORD_USED, sent by
/// `pam_localauth.so` from pam_setcred, after pam_unix accepted it): the rule of docs/security.md ("Who may report
/// a password"), as one pure function. The daemon never sees the password; it believes the report
/// from a caller whose PAM stack it trusts to have checked one.
///
/// A report is never proof of presence: it only lets a finger be asked for again (the finger still
/// has to be at the reader), so the worst a forged report does is keep the rules of
/// `PasswordRule` from asking for the password.
public enum PasswordReport {
    /// Where a report comes from: from the kernel and logind, never from the client.
    public struct Origin: Equatable, Sendable {
        /// The caller's effective uid.
        public var callerUID: UInt32
        /// The caller's effective uid is 0: login, a greeter, sudo, su, polkit's helper — a PAM
        /// stack run by root, trusted for what it checked.
        public var callerIsRoot: Bool
        /// The caller's session; nil when it is in none or there is no logind to ask.
        public var session: SessionFacts?
        /// The process that opened the connection has exited (its pid may be another's now).
        public var connectionOrphaned: Bool

        public init(callerUID: UInt32, callerIsRoot: Bool, session: SessionFacts?, connectionOrphaned: Bool = false) {
            self.callerUID = callerUID
            self.callerIsRoot = callerIsRoot
            self.session = session
            self.connectionOrphaned = connectionOrphaned
        }
    }

    /// Why a report is not believed (`LocalAuthProtocol`, where its phrase is).
    public typealias Refusal = PasswordReportRefusal

    public enum Verdict: Equatable, Sendable {
        case believed
        case refused(Refusal)
    }

    public static func decide(_ origin: Origin) -> Verdict {
        if origin.connectionOrphaned { return .refused(.connectionOrphaned) }
        if origin.session?.isRemote == true { return .refused(.remoteSession) }
        // Root's own PAM stack checked the password (login and greeters before any session exists).
        if origin.callerIsRoot { return .believed }
        // The user's own uid: a screen locker, inside the user's own session in front on its seat.
        guard let session = origin.session else { return .refused(.noSession) }
        guard session.ownerUID == origin.callerUID else { return .refused(.notOwnSession) }
        guard session.sessionClass == "user" else { return .refused(.sessionClass(session.sessionClass)) }
        guard session.isActive else { return .refused(.sessionNotActive) }
        return .believed
    }
}

extension PasswordReportRefusal {
    /// "Password use not recorded: it comes from a remote session"
    public var message: String { Phrase.passwordUseNotRecorded(self).english }
}
