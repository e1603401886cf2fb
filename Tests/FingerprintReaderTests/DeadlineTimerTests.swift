// SPDX-License-Identifier: Apache-2.0
// DeadlineTimer: fires once after its deadline, never after cancel. (Why it replaced Task.sleep, the memory a
// cancelled sleep keeps until its deadline, shows in `make bench`'s figure 7: docs/performance.md.)

import FingerprintReader
import Glibc
import Synchronization
import Testing

@Suite(.timeLimit(.minutes(1)))
struct DeadlineTimerTests {
    final class Counter: Sendable {
        private let count = Atomic(0)
        func add() { count.add(1, ordering: .relaxed) }
        var value: Int { count.load(ordering: .relaxed) }
    }

    /// Waits (polling, bounded) until `condition` holds.
    static func eventually(within seconds: Double = 10, _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while !condition() {
            if ContinuousClock.now > deadline { return false }
            await Task.yield()
            usleep(1000)
        }
        return true
    }

    @Test func deadlineTimer_afterItsDeadline_firesOnce() async {
        let fired = Counter()
        let started = ContinuousClock.now
        let timer = DeadlineTimer(ms: 20) { fired.add() }
        #expect(await Self.eventually { fired.value == 1 })
        #expect(ContinuousClock.now - started >= .milliseconds(20))
        timer.cancel()
        #expect(fired.value == 1)
    }

    @Test func deadlineTimer_whenCancelled_neverFires() async {
        let cancelled = Counter()
        let later = Counter()
        let timer = DeadlineTimer(ms: 10) { cancelled.add() }
        timer.cancel()
        // A second timer with a later deadline on the same queue: once it fired, the first had its chance.
        let witness = DeadlineTimer(ms: 100) { later.add() }
        #expect(await Self.eventually { later.value == 1 })
        #expect(cancelled.value == 0)
        witness.cancel()
    }
}
