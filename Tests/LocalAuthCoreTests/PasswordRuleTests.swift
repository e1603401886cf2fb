// SPDX-License-Identifier: Apache-2.0

import LocalAuthCore
import LocalAuthProtocol
import Testing

/// Rows R1–R13 of docs/policy.md: when the password is required instead of a finger.
@Suite struct PasswordRuleTests {
    static let hour = PasswordRules.hourMs
    static let bootA = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
    static let bootB = "aaaabbbbccccddddeeeeffff00001111"

    /// `ms` after the start of boot A (the boot clock started 10 minutes before t0 on the wall).
    static func inBootA(_ ms: Int64) -> BootInstant {
        BootInstant(bootID: bootA, bootMs: 600_000 + ms, wallMs: t0 + ms)
    }

    static func facts(
        now: BootInstant = inBootA(0), use: PasswordUse? = PasswordUse(), noSession: Bool? = false,
        reported: Bool = true
    ) -> PasswordFacts {
        PasswordFacts(now: now, use: use, userHasNoSession: noSession, passwordReported: reported)
    }

    static func judge(_ facts: PasswordFacts, _ rules: PasswordRules = PasswordRules()) -> PasswordRequirement {
        PasswordRule.evaluate(facts, rules: rules)
    }

    @Test func passwordRule_whenNoStackEverReportedAPassword_isNotEnforced() {
        #expect(Self.judge(Self.facts(use: PasswordUse(), noSession: true, reported: false)) == .notEnforced)
        #expect(Self.judge(Self.facts(use: nil, reported: false)) == .notEnforced)
    }

    @Test func passwordRule_whenPasswordNotUsedSinceThisBoot_requiresItAfterRestart() {
        #expect(Self.judge(Self.facts(use: PasswordUse())) == .required(.restart))
        // Used a minute before the restart, in boot B: a new boot id is a restart, whatever the clocks say.
        let before = BootInstant(bootID: Self.bootB, bootMs: 9_000_000, wallMs: t0 - 60_000)
        let fingerToday = Self.inBootA(-1000)
        #expect(Self.judge(Self.facts(use: PasswordUse(password: before, finger: fingerToday))) == .required(.restart))
        #expect(PasswordRequiredReason.restart.message == "Password required after restart")
    }

    @Test func passwordRule_whenPasswordUsedThisBoot_acceptsTheFingerUntilMaxAge() {
        let use = PasswordUse(password: Self.inBootA(0))
        #expect(
            Self.judge(Self.facts(now: Self.inBootA(2 * Self.hour), use: use)) == .notRequired(forMs: 46 * Self.hour))
        // With max-age off, the idle rule (156 h / 4 h) is the next deadline: 156 h after the password.
        var rules = PasswordRules()
        rules.maxAgeMs = nil
        #expect(
            Self.judge(Self.facts(now: Self.inBootA(2 * Self.hour), use: use), rules)
                == .notRequired(forMs: 154 * Self.hour))
    }

    @Test func passwordRule_whenPasswordOlderThanMaxAge_requiresIt() {
        let use = PasswordUse(password: Self.inBootA(0), finger: Self.inBootA(48 * Self.hour - 1))
        #expect(Self.judge(Self.facts(now: Self.inBootA(48 * Self.hour - 1), use: use)) == .notRequired(forMs: 1))
        #expect(
            Self.judge(Self.facts(now: Self.inBootA(48 * Self.hour), use: use))
                == .required(.maxAge(ms: 48 * Self.hour)))
        #expect(PasswordRequiredReason.maxAge(ms: 48 * Self.hour).message == "Password required after 48 hours")
    }

    @Test func passwordRule_whenWallClockIsSetBack_measuresOnTheBootClock() {
        let use = PasswordUse(password: Self.inBootA(0))
        // 49 h later on the boot clock, but the wall clock was set back by two days.
        var now = Self.inBootA(49 * Self.hour)
        now.wallMs -= 48 * Self.hour
        #expect(Self.judge(Self.facts(now: now, use: use)) == .required(.maxAge(ms: 48 * Self.hour)))
        // And set forward by two days after 1 h: still 47 h left.
        var later = Self.inBootA(Self.hour)
        later.wallMs += 48 * Self.hour
        #expect(Self.judge(Self.facts(now: later, use: use)) == .notRequired(forMs: 47 * Self.hour))
    }

    @Test func passwordRule_idle_whenPasswordOldAndNoFingerForFourHours_requiresIt() {
        var rules = PasswordRules()
        rules.maxAgeMs = nil
        let use = PasswordUse(password: Self.inBootA(0), finger: Self.inBootA(153 * Self.hour))
        let now = Self.inBootA(157 * Self.hour)
        #expect(
            Self.judge(Self.facts(now: now, use: use), rules)
                == .required(.idle(passwordMs: 156 * Self.hour, fingerMs: 4 * Self.hour)))
        #expect(
            PasswordRequiredReason.idle(passwordMs: 156 * Self.hour, fingerMs: 4 * Self.hour).message
                == "Password required: not used for 156 hours and no fingerprint for 4 hours")
    }

    @Test func passwordRule_idle_whenAFingerWasAcceptedWithinFourHours_acceptsTheFinger() {
        var rules = PasswordRules()
        rules.maxAgeMs = nil
        let use = PasswordUse(password: Self.inBootA(0), finger: Self.inBootA(157 * Self.hour))
        // The password is 160 h old, the finger 3 h: one more hour without a finger, then required.
        #expect(
            Self.judge(Self.facts(now: Self.inBootA(160 * Self.hour), use: use), rules)
                == .notRequired(forMs: Self.hour))
        // Before 156 h the later deadline counts: the password's.
        let young = PasswordUse(password: Self.inBootA(0), finger: Self.inBootA(10 * Self.hour))
        #expect(
            Self.judge(Self.facts(now: Self.inBootA(100 * Self.hour), use: young), rules)
                == .notRequired(forMs: 56 * Self.hour))
    }

    @Test func passwordRule_whenTheUserHasNoSession_requiresThePasswordForTheFirstSession() {
        let use = PasswordUse(password: Self.inBootA(0))
        #expect(
            Self.judge(Self.facts(now: Self.inBootA(60_000), use: use, noSession: true)) == .required(.firstSession))
        // Without logind nothing is known about sessions: the rule does not apply.
        #expect(
            Self.judge(Self.facts(now: Self.inBootA(60_000), use: use, noSession: nil))
                == .notRequired(forMs: 48 * Self.hour - 60_000))
        var rules = PasswordRules()
        rules.forFirstSession = false
        #expect(
            Self.judge(Self.facts(now: Self.inBootA(60_000), use: use, noSession: true), rules)
                == .notRequired(forMs: 48 * Self.hour - 60_000))
        #expect(PasswordRequiredReason.firstSession.message == "Password required to start your first session")
    }

    @Test func passwordRule_whenTheRecordIsUnreadable_requiresThePassword() {
        #expect(Self.judge(Self.facts(use: nil)) == .required(.useUnknown))
        #expect(PasswordRequiredReason.useUnknown.message == "Password required: its last use could not be read")
        #expect(Self.judge(Self.facts(use: nil), .off) == .notRequired(forMs: nil))
    }

    @Test func passwordRule_whenRestartRuleIsOff_measuresAcrossBootsOnTheWallClock() {
        var rules = PasswordRules()
        rules.afterRestart = false
        let before = BootInstant(bootID: Self.bootB, bootMs: 9_000_000, wallMs: t0 - 3 * Self.hour)
        #expect(
            Self.judge(Self.facts(use: PasswordUse(password: before)), rules) == .notRequired(forMs: 45 * Self.hour))
        // A wall clock now before the recorded time cannot be measured: the strict side.
        let future = BootInstant(bootID: Self.bootB, bootMs: 9_000_000, wallMs: t0 + 1)
        #expect(
            Self.judge(Self.facts(use: PasswordUse(password: future)), rules) == .required(.maxAge(ms: 48 * Self.hour)))
    }

    @Test func passwordRule_whenEveryRuleIsOff_neverRequires() {
        #expect(Self.judge(Self.facts(use: PasswordUse(), noSession: true), .off) == .notRequired(forMs: nil))
    }

    @Test func passwordRule_recording_coalescesWithinAMinuteOfTheSameBoot() {
        let first = PasswordRule.recordingPassword(nil, at: Self.inBootA(0))
        #expect(first == PasswordUse(password: Self.inBootA(0)))
        #expect(PasswordRule.recordingPassword(first, at: Self.inBootA(59_999)) == nil)
        #expect(PasswordRule.recordingPassword(first, at: Self.inBootA(60_000))?.password == Self.inBootA(60_000))
        let otherBoot = BootInstant(bootID: Self.bootB, bootMs: 1, wallMs: t0 + 1)
        #expect(PasswordRule.recordingPassword(first, at: otherBoot)?.password == otherBoot)
        let fingered = PasswordRule.recordingFinger(first!, at: Self.inBootA(1000))
        #expect(fingered == PasswordUse(password: Self.inBootA(0), finger: Self.inBootA(1000)))
        #expect(PasswordRule.recordingFinger(fingered!, at: Self.inBootA(2000)) == nil)
    }

    @Test func passwordRule_precedence_restartBeforeAgeBeforeFirstSession() {
        // Nothing used this boot and no session: the restart is what the person is told.
        #expect(Self.judge(Self.facts(use: PasswordUse(), noSession: true)) == .required(.restart))
        // Used 50 h ago this boot and no session: the age.
        let old = PasswordUse(password: Self.inBootA(0))
        #expect(
            Self.judge(Self.facts(now: Self.inBootA(50 * Self.hour), use: old, noSession: true))
                == .required(.maxAge(ms: 48 * Self.hour)))
    }
}
