// SPDX-License-Identifier: Apache-2.0

import LocalAuthCore
import Testing

/// Row D1–D3 of docs/policy.md: the backoff schedule.
@Suite struct PasscodeDelayTests {
    @Test(
        arguments: [(0, 0), (5, 0), (6, 60), (7, 300), (8, 900), (9, 3600), (10, 3600), (50, 3600)] as [(Int, Int64)])
    func passcodeDelay_schedule_followsAppleDefaults(failures: Int, seconds: Int64) {
        #expect(PasscodeDelay.schedule(failures: failures, config: LockoutConfig()) == seconds)
    }

    @Test func passcodeDelay_schedule_followsConfig() {
        let config = LockoutConfig(passcodeAttempts: 3, passcodeDelays: [10, 20])
        #expect((1...6).map { PasscodeDelay.schedule(failures: $0, config: config) } == [0, 0, 10, 20, 20, 20])
        let none = LockoutConfig(passcodeDelays: [])
        #expect(PasscodeDelay.schedule(failures: 9, config: none) == 0)
    }

    @Test(
        arguments: [
            (1, "1 second"), (45_000, "45 seconds"), (59_001, "1 minute"), (60_000, "1 minute"),
            (299_500, "5 minutes"), (900_000, "15 minutes"), (3_600_000, "1 hour"), (3_540_001, "1 hour"),
            (5_400_000, "90 minutes"),
        ] as [(Int64, String)])
    func passcodeDelay_describe_roundsUp(ms: Int64, text: String) {
        #expect(PasscodeDelay.describe(ms: ms) == text)
    }
}
