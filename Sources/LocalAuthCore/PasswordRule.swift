// SPDX-License-Identifier: Apache-2.0
import LocalAuthProtocol

/// A moment as two clocks saw it: the boot's own clock (`CLOCK_BOOTTIME`: counts suspend, cannot
/// be set) under that boot's id (`/proc/sys/kernel/random/boot_id`), and the wall clock.
///
/// Within one boot the rules measure time on the boot clock, so a wall clock set back (by NTP, or
/// by a user allowed to set the time) never lengthens the time a finger is accepted.
public struct BootInstant: Equatable, Sendable {
    /// The boot's id: 32 lowercase hex digits (the kernel's UUID without its dashes).
    public var bootID: String
    /// Milliseconds on `CLOCK_BOOTTIME` in that boot.
    public var bootMs: Int64
    /// Milliseconds since the Unix epoch.
    public var wallMs: Int64

    public init(bootID: String, bootMs: Int64, wallMs: Int64) {
        self.bootID = bootID
        self.bootMs = bootMs
        self.wallMs = wallMs
    }

    /// How long ago `earlier` was, seen from here; nil when it cannot be told safely (a time in the
    /// future on either clock). Within one boot the boot clock answers; across boots the wall clock.
    public func elapsed(since earlier: BootInstant) -> Int64? {
        let ms = earlier.bootID == bootID ? bootMs - earlier.bootMs : wallMs - earlier.wallMs
        return ms >= 0 ? ms : nil
    }
}

/// What the daemon remembers of one user's password and finger: when each last proved the user.
public struct PasswordUse: Equatable, Sendable {
    /// The account password (reported by the PAM stack) or the localauth passcode, last proven.
    public var password: BootInstant?
    /// The last finger that authenticated the user.
    public var finger: BootInstant?

    public init(password: BootInstant? = nil, finger: BootInstant? = nil) {
        self.password = password
        self.finger = finger
    }
}

/// The "password required" rules, Apple's (Platform Security: "Face ID, Touch ID, passcodes and
/// passwords") and one of Linux's; each can be turned off in `/etc/localauthd.conf`.
public struct PasswordRules: Equatable, Sendable {
    /// `password-after-restart`: the password must have been used since this boot.
    public var afterRestart: Bool
    /// `password-max-age`: the password must have been used within this many ms; nil: off.
    public var maxAgeMs: Int64?
    /// `password-idle-max-age` with `finger-idle-max-age`: when the password has not been used for
    /// the first and no finger has been accepted for the second, the password is required; nil: off.
    public var idlePasswordMs: Int64?
    public var idleFingerMs: Int64
    /// `password-for-first-session`: a request for a user who has no session yet (a login) takes
    /// the password, so that the keyring opens.
    public var forFirstSession: Bool

    public static let hourMs: Int64 = 3_600_000

    public init(
        afterRestart: Bool = true, maxAgeMs: Int64? = 48 * hourMs, idlePasswordMs: Int64? = 156 * hourMs,
        idleFingerMs: Int64 = 4 * hourMs, forFirstSession: Bool = true
    ) {
        self.afterRestart = afterRestart
        self.maxAgeMs = maxAgeMs
        self.idlePasswordMs = idlePasswordMs
        self.idleFingerMs = idleFingerMs
        self.forFirstSession = forFirstSession
    }

    /// Every rule off: fingers are judged by the other rules only.
    public static let off = PasswordRules(
        afterRestart: false, maxAgeMs: nil, idlePasswordMs: nil, forFirstSession: false)

    /// Records of use closer together than this are not written again (a finger every few seconds
    /// must not cost a disk write each); the rules then see a slightly older time, the strict side.
    public static let coalesceMs: Int64 = 60_000
}

/// The facts the rules decide on, gathered by the daemon for one request.
public struct PasswordFacts: Equatable, Sendable {
    /// Now, on both clocks.
    public var now: BootInstant
    /// The user's record; nil when it exists but cannot be read (fail closed: required).
    public var use: PasswordUse?
    /// True when logind shows no session of the user (the request is a login); false when it shows
    /// one; nil when there is no logind to ask (the first-session rule cannot apply).
    public var userHasNoSession: Bool?
    /// True once any PAM stack on this machine has reported a password (`pam_localauth.so
    /// reports it from pam_setcred). Before that the password rules cannot be met, so they are not applied.
    public var passwordReported: Bool

    public init(now: BootInstant, use: PasswordUse?, userHasNoSession: Bool?, passwordReported: Bool) {
        self.now = now
        self.use = use
        self.userHasNoSession = userHasNoSession
        self.passwordReported = passwordReported
    }
}

/// The answer of the rules.
public enum PasswordRequirement: Equatable, Sendable {
    /// No PAM stack reports password use, so no rule is applied (the behaviour without the rules).
    case notEnforced
    /// The finger is refused and the password asked for.
    case required(PasswordRequiredReason)
    /// The finger may be used; `forMs` from now a rule will require the password unless it is used
    /// again (nil: no rule depends on time).
    case notRequired(forMs: Int64?)

    public var reason: PasswordRequiredReason? {
        if case .required(let reason) = self { return reason }
        return nil
    }
}

/// The rules as one pure function: the stored use, the boot, the sessions and the clock in,
/// "required, why" or "not required, for how long" out.
public enum PasswordRule {
    public static func evaluate(_ facts: PasswordFacts, rules: PasswordRules) -> PasswordRequirement {
        guard facts.passwordReported else { return .notEnforced }
        let anyRule =
            rules.afterRestart || rules.maxAgeMs != nil || rules.idlePasswordMs != nil || rules.forFirstSession
        guard anyRule else { return .notRequired(forMs: nil) }
        guard let use = facts.use else { return .required(.useUnknown) }
        let now = facts.now
        // A time that cannot be measured counts as long ago: the strict side.
        let passwordAge = use.password.flatMap { now.elapsed(since: $0) } ?? .max
        let fingerAge = use.finger.flatMap { now.elapsed(since: $0) } ?? .max

        if rules.afterRestart, use.password?.bootID != now.bootID { return .required(.restart) }
        var untilMs: Int64? = nil
        func due(in ms: Int64) { untilMs = min(untilMs ?? .max, ms) }
        if let maxAge = rules.maxAgeMs {
            if passwordAge >= maxAge { return .required(.maxAge(ms: maxAge)) }
            due(in: maxAge - passwordAge)
        }
        if let idlePassword = rules.idlePasswordMs {
            if passwordAge >= idlePassword && fingerAge >= rules.idleFingerMs {
                return .required(.idle(passwordMs: idlePassword, fingerMs: rules.idleFingerMs))
            }
            // Both must have run out: the later of the two, if nothing is used meanwhile.
            due(
                in: max(
                    idlePassword - min(passwordAge, idlePassword),
                    rules.idleFingerMs - min(fingerAge, rules.idleFingerMs)))
        }
        if rules.forFirstSession, facts.userHasNoSession == true { return .required(.firstSession) }
        return .notRequired(forMs: untilMs)
    }

    /// The record after the password (or the passcode) proved the user at `now`; nil when the
    /// stored one is recent enough that a write would change nothing that matters.
    public static func recordingPassword(_ use: PasswordUse?, at now: BootInstant) -> PasswordUse? {
        recording(\.password, in: use ?? PasswordUse(), at: now)
    }

    /// The record after a finger proved the user at `now`; nil when the stored one is recent enough.
    public static func recordingFinger(_ use: PasswordUse, at now: BootInstant) -> PasswordUse? {
        recording(\.finger, in: use, at: now)
    }

    /// `use` with `field` set to `now`; nil when the stored time is in this boot and less than
    /// `PasswordRules.coalesceMs` ago.
    private static func recording(
        _ field: WritableKeyPath<PasswordUse, BootInstant?>, in use: PasswordUse, at now: BootInstant
    ) -> PasswordUse? {
        if let last = use[keyPath: field], let age = now.elapsed(since: last), last.bootID == now.bootID,
            age < PasswordRules.coalesceMs
        {
            return nil
        }
        var next = use
        next[keyPath: field] = now
        return next
    }
}

extension PasswordRequiredReason {
    /// The line a person is shown: "Password required after restart", "… after 48 hours".
    public var message: String { Phrase.passwordRequired(self).english }
}
