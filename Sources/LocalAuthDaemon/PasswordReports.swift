// SPDX-License-Identifier: Apache-2.0
import LocalAuthCore
import LocalAuthProtocol
import LocalAuthStore

/// PASSWORD_USED: a PAM stack says the account's password just succeeded
/// (`pam_localauth.so`, from pam_setcred after pam_unix accepted it). Believed or not by `PasswordReport.decide`;
/// recorded at most once a minute per user (`PasswordRule.recordingPassword`), so a flood of
/// reports costs no disk writes; the first believed report on a machine turns the "password
/// required" rules on (`password-reported`). Runs in the user's turn (`UserQueue`).
struct PasswordReports {
    let parts: DaemonParts

    nonisolated(nonsending) func record(user: String, caller: PeerCredentials) async -> Answer {
        let origin = await Self.origin(of: caller, parts: parts)
        if case .refused(let why) = PasswordReport.decide(origin) {
            return Answer(.notAuthorized, Phrase.passwordUseNotRecorded(why))
        }
        guard let now = parts.bootClock() else {
            parts.audit.notice("cannot read \(BootClock.bootIDPath); password use cannot be recorded")
            return Answer(
                .internalError, Phrase.said("The boot id cannot be read; the password use was not recorded"))
        }
        let stored: PasswordUse?
        switch (try? parts.store.loadPasswordUse(user: user)) ?? .corrupt("unreadable") {
        case .absent: stored = nil
        case .ok(let use): stored = use
        case .corrupt(let why):
            // A fresh record replaces it: this report is the newest fact there is.
            parts.audit.notice("the password-use record of \(user) is unreadable (\(why)); writing a fresh one")
            stored = nil
        }
        do {
            // The marker first: a crash before the record leaves the rules on and no use recorded.
            if try parts.store.markPasswordReported(atMs: now.wallMs) {
                parts.audit.info("a PAM stack reported a password use: the password-required rules now apply")
            }
            guard let next = PasswordRule.recordingPassword(stored, at: now) else {
                return Answer(
                    .success, Phrase.said("Password use of %s already recorded in the last minute", .verbatim(user)))
            }
            try parts.store.savePasswordUse(next, user: user)
        } catch {
            parts.audit.notice("cannot record the password use of \(user): \(error)")
            return Answer(.internalError, Phrase.said("The password use could not be recorded"))
        }
        return Answer(.success, Phrase.said("Password use of %s recorded", .verbatim(user)))
    }

    /// Where the report comes from: root or not, and the caller's login session.
    nonisolated(nonsending) static func origin(of caller: PeerCredentials, parts: DaemonParts) async
        -> PasswordReport.Origin
    {
        // The caller's session as logind has it: owner, class, Active, Remote (sd-login's files,
        // else GetSessionByPID and the session's properties).
        let place = await parts.sessions.view(of: caller.pid, uid: caller.uid, tty: nil, askLid: false)
        return PasswordReport.Origin(
            callerUID: caller.uid, callerIsRoot: caller.isRoot, session: place.session.map(SessionFacts.init),
            connectionOrphaned: !caller.isStillTheConnectingProcess)
    }
}

extension DaemonParts {
    /// The "password required" rules for `user` now (docs/policy.md, rows R). `userHasNoSession`:
    /// logind shows no session of the user (nil: not asked, or no logind).
    func passwordRequirement(user: String, userHasNoSession: Bool?) -> PasswordRequirement {
        // A marker that cannot be checked counts as present: the rules stay on.
        let reported = (try? store.passwordReported()) ?? true
        // Without a boot id nothing recorded can be of this boot: "" matches no recorded id.
        let now = bootClock() ?? BootInstant(bootID: "", bootMs: 0, wallMs: clock())
        let use: PasswordUse?
        switch try? store.loadPasswordUse(user: user) {
        case .absent?: use = PasswordUse()
        case .ok(let recorded)?: use = recorded
        case .corrupt(let why)?:
            audit.notice("the password-use record of \(user) is unreadable (\(why)); the password is required")
            use = nil
        case nil: use = nil
        }
        return PasswordRule.evaluate(
            PasswordFacts(now: now, use: use, userHasNoSession: userHasNoSession, passwordReported: reported),
            rules: configuration.passwordRules)
    }

    /// The rules for an evaluation of `user`: logind is asked whether the user has a session only
    /// when that can change the answer (the first-session rule is on and nothing else requires
    /// the password).
    nonisolated(nonsending) func passwordRequirementForEvaluation(user: String) async -> PasswordRequirement {
        let first = passwordRequirement(user: user, userHasNoSession: nil)
        guard case .notRequired = first, configuration.passwordRules.forFirstSession,
            let uid = PeerCredentials.uid(of: user)
        else { return first }
        guard let has = await sessions.hasLocalSession(uid: uid) else { return first }
        return passwordRequirement(user: user, userHasNoSession: !has)
    }

    /// Records that a finger or the passcode proved `user` now (`.recordUse`). A write that fails
    /// is logged: the rules then see an older use, the strict side.
    func recordUse(_ kind: ProofKind, user: String) {
        guard let now = bootClock() else { return }
        let stored: PasswordUse?
        switch try? store.loadPasswordUse(user: user) {
        case .ok(let use)?: stored = use
        case .absent?: stored = nil
        case .corrupt?, nil:
            // Only a proven password may replace a damaged record; a finger leaves it alone.
            guard kind == .passcode else { return }
            stored = nil
        }
        let next =
            kind == .passcode
            ? PasswordRule.recordingPassword(stored, at: now)
            : PasswordRule.recordingFinger(stored ?? PasswordUse(), at: now)
        guard let next else { return }
        do {
            try store.savePasswordUse(next, user: user)
        } catch {
            audit.notice("cannot record the \(kind == .passcode ? "passcode" : "finger") use of \(user): \(error)")
        }
    }

}
