// SPDX-License-Identifier: Apache-2.0

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

    /// "45 seconds", "1 minute", "15 minutes", "1 hour": rounded up, so the person never
    /// retries too early.
    public static func describe(ms: Int64) -> String {
        let seconds = max((ms + 999) / 1000, 1)
        if seconds < 60 { return seconds == 1 ? "1 second" : "\(seconds) seconds" }
        let minutes = (seconds + 59) / 60
        if minutes < 60 || minutes % 60 != 0 { return minutes == 1 ? "1 minute" : "\(minutes) minutes" }
        let hours = minutes / 60
        return hours == 1 ? "1 hour" : "\(hours) hours"
    }
}
