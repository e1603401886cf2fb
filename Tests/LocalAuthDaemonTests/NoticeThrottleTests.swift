// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import LocalAuthDoorLimits

/// Lines a client causes by connecting are rate-limited per uid and kind, and summed up.
@Suite struct NoticeThrottleTests {
    let t0 = ContinuousClock.now
    let refused = NoticeThrottle.Key(uid: 1001, kind: "connections refused")

    @Test func admit_whenOneUIDFloods_logsTheBurstThenOneSummaryForTheRest() {
        let throttle = NoticeThrottle(burst: 5, window: .seconds(10))
        var admissions: [NoticeThrottle.Admission] = []
        for i in 0..<23_000 { admissions.append(throttle.admit(refused, at: t0 + .microseconds(i * 40))) }
        #expect(admissions.prefix(5).allSatisfy { $0 == .log })
        #expect(admissions[5] == .suppressedFirst(summaryDue: .seconds(10) - .microseconds(5 * 40)))
        #expect(admissions.dropFirst(6).allSatisfy { $0 == .suppressed })
        #expect(throttle.summaries(at: t0 + .seconds(5)).isEmpty, "not before the window ends")
        #expect(
            throttle.summaries(at: t0 + .seconds(10)) == ["uid 1001: 22995 more connections refused in the last 10 s"])
        #expect(throttle.summaries(at: t0 + .seconds(11)).isEmpty, "told once")
        #expect(throttle.admit(refused, at: t0 + .seconds(11)) == .log, "a new window logs again")
    }

    @Test func admit_isCountedPerUIDAndKind() {
        let throttle = NoticeThrottle(burst: 1, window: .seconds(10))
        #expect(throttle.admit(refused, at: t0) == .log)
        #expect(throttle.admit(refused, at: t0) != .log)
        #expect(throttle.admit(NoticeThrottle.Key(uid: 1002, kind: "connections refused"), at: t0) == .log)
        #expect(throttle.admit(NoticeThrottle.Key(uid: 1001, kind: "connections closed"), at: t0) == .log)
    }

    @Test func admit_whenAWindowEndsWithNothingLeftOut_startsAFreshOne() {
        let throttle = NoticeThrottle(burst: 2, window: .seconds(10))
        #expect(throttle.admit(refused, at: t0) == .log)
        #expect(throttle.admit(refused, at: t0 + .seconds(10)) == .log)
        #expect(throttle.admit(refused, at: t0 + .seconds(10)) == .log)
        #expect(throttle.admit(refused, at: t0 + .seconds(10)) == .suppressedFirst(summaryDue: .seconds(10)))
    }

    /// Issue 29: each uid that ever caused a line kept its window for good (a burst of 2000 uids'
    /// idle closes: 2000 records, never dropped). Past 1024, windows that ended with nothing left
    /// out go; one still waiting for its summary stays until told.
    @Test func admit_manyUIDsOnce_keepsNoRecordPastItsWindow_butAWindowOwingASummary() {
        let throttle = NoticeThrottle(burst: 1, window: .seconds(10))
        #expect(throttle.admit(refused, at: t0) == .log)
        #expect(throttle.admit(refused, at: t0) == .suppressedFirst(summaryDue: .seconds(10)))
        for uid in 0..<2000 { _ = throttle.admit(NoticeThrottle.Key(uid: UInt32(uid), kind: "closed"), at: t0) }
        #expect(throttle.windowsKept == 2001)
        #expect(throttle.admit(NoticeThrottle.Key(uid: 5000, kind: "closed"), at: t0 + .seconds(11)) == .log)
        #expect(throttle.windowsKept == 2, "\(throttle.windowsKept) windows kept")
        #expect(throttle.summaries(at: t0 + .seconds(11)) == ["uid 1001: 1 more connections refused in the last 11 s"])
    }
}
