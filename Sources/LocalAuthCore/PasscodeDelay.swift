// SPDX-License-Identifier: Apache-2.0

import LocalAuthProtocol

/// The escalating passcode delay (Apple's: 1 min after the 6th wrong passcode, 5 min after the
/// 7th, 15 min after the 8th, 60 min after each further one).
public enum PasscodeDelay {
    /// Seconds the passcode is refused after the `failures`-th consecutive wrong passcode;
    /// 0 while `failures` is below `config.passcodeAttempts`.
    public static func schedule(failures: Int, config: LockoutConfig) -> Int64 {
        let attempts = max(config.passcodeAttempts, 1)
        guard failures >= attempts, let last = config.passcodeDelays.last else { return 0 }
        let index = failures - attempts
        return max(index < config.passcodeDelays.count ? config.passcodeDelays[index] : last, 0)
    }

    /// Milliseconds of delay left at `nowMs`; never shortened by a clock set backwards, because
    /// the remaining time is measured from the latest clock reading the user's state has seen.
    public static func remainingMs(state: UserAuthState, nowMs: Int64) -> Int64 {
        max(state.passcodeLockedUntilMs - max(nowMs, state.lastSeenMs), 0)
    }

    /// "45 seconds", "1 minute", "15 minutes", "1 hour": rounded up (`Phrase.duration`).
    public static func describe(ms: Int64) -> String { Phrase.duration(ms: ms) }
}

/// The counting rules every path that counts shares (an evaluation, the passcode change): a
/// finger attempt is counted on disk when the reader reports the touch (at the latest before its
/// answer is told), a passcode attempt before it is hashed, and a success resets the count only
/// through a write that must succeed before it is revealed.
public enum LockoutRules {
    /// Biometrics are locked: the flag, or as many failures as the limit (a crash after a touch was
    /// counted, before its answer, leaves the count without the flag).
    public static func biometryLocked(_ state: UserAuthState, config: LockoutConfig) -> Bool {
        state.biometryLocked || state.fingerFailures >= max(config.fingerAttempts, 1)
    }

    /// One finger attempt, counted when the reader reports the touch: it stays a miss unless a
    /// match, a cancel, a timeout or a reader failure takes it back.
    public static func fingerAttemptStarted(_ state: inout UserAuthState) {
        state.fingerFailures += 1
    }

    /// The counted attempt turned out a miss: lock when it reached the limit.
    public static func fingerMissed(_ state: inout UserAuthState, config: LockoutConfig) {
        if state.fingerFailures >= max(config.fingerAttempts, 1) { state.biometryLocked = true }
    }

    /// A finger matched: its attempt and every earlier miss are forgotten.
    public static func fingerMatched(_ state: inout UserAuthState) {
        state.fingerFailures = 0
    }

    /// The counted touch got no answer (cancel, timeout, reader failure, fallback).
    public static func fingerAttemptTakenBack(_ state: inout UserAuthState) {
        state.fingerFailures = max(state.fingerFailures - 1, 0)
    }

    /// One passcode attempt, counted before the hash, with the delay a wrong one brings; `lastSeenMs`
    /// must be the latest clock reading (delays start there).
    public static func passcodeAttemptStarted(_ state: inout UserAuthState, config: LockoutConfig) {
        state.passcodeFailures += 1
        let delayMs = PasscodeDelay.schedule(failures: state.passcodeFailures, config: config) * 1000
        if delayMs > 0 { state.passcodeLockedUntilMs = state.lastSeenMs + delayMs }
    }

    /// A correct passcode: every count and lockout is lifted (Apple: the passcode unlocks biometrics).
    public static func passcodeAccepted(_ state: inout UserAuthState) {
        state.fingerFailures = 0
        state.biometryLocked = false
        state.passcodeFailures = 0
        state.passcodeLockedUntilMs = 0
    }

    /// A passcode set, changed or removed: the old one's wrong attempts and delay go with it (the
    /// fingers' count and lockout are left as they are).
    public static func passcodeReplaced(_ state: inout UserAuthState) {
        state.passcodeFailures = 0
        state.passcodeLockedUntilMs = 0
    }

    /// True when `new` only relaxes `old`: no count, lockout or delay higher, `lastSeenMs` not
    /// earlier, the passcode and the domain state the same. Losing such a write (power loss before
    /// it reached the disk) leaves `old`, which is at least as strict: the store writes it without
    /// syncing the directory (docs/reliability.md, "Power loss"). The relation is
    /// transitive, so a run of such writes falls back to the last synced one, stricter than each.
    public static func onlyRelaxes(_ new: UserAuthState, from old: UserAuthState) -> Bool {
        new.fingerFailures <= old.fingerFailures && (!new.biometryLocked || old.biometryLocked)
            && new.passcodeFailures <= old.passcodeFailures && new.passcodeLockedUntilMs <= old.passcodeLockedUntilMs
            // A later lastSeenMs shortens what is left of a delay (`PasscodeDelay.remainingMs`):
            // losing it is the strict side; an earlier one must be synced.
            && new.lastSeenMs >= old.lastSeenMs
            && new.passcodeHash == old.passcodeHash && new.domainState == old.domainState
    }

    /// The passcode attempt counted ahead is not counted after all (the same wrong passcode again).
    public static func passcodeAttemptTakenBack(_ state: inout UserAuthState, to before: UserAuthState) {
        state.passcodeFailures = before.passcodeFailures
        state.passcodeLockedUntilMs = before.passcodeLockedUntilMs
    }
}
