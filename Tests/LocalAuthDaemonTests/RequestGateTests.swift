// SPDX-License-Identifier: Apache-2.0
import Synchronization
import Testing

@testable import LocalAuthDoorLimits

/// Turns per uid: a flood from one uid waits behind itself, root never waits, and a request
/// cancelled while it waits takes no turn.
@Suite(.timeLimit(.minutes(1)))
struct RequestGateTests {
    @Test func enter_whenUIDHoldsItsLimit_waitsUntilATurnIsGivenBack() async throws {
        let gate = RequestGate(limit: 2)
        #expect(await gate.enter(uid: 1000))
        #expect(await gate.enter(uid: 1000))
        let third = Task { await gate.enter(uid: 1000) }
        while gate.counts(uid: 1000).waiting == 0 { await Task.yield() }
        #expect(gate.counts(uid: 1000) == (running: 2, waiting: 1))
        // Another uid and root are not held up by uid 1000's queue.
        #expect(await gate.enter(uid: 1001))
        #expect(await gate.enter(uid: 0))
        #expect(gate.counts(uid: 0) == (running: 0, waiting: 0))
        gate.leave(uid: 1000)
        #expect(await third.value)
        #expect(gate.counts(uid: 1000) == (running: 2, waiting: 0))
        gate.leave(uid: 1000)
        gate.leave(uid: 1000)
        #expect(gate.counts(uid: 1000) == (running: 0, waiting: 0))
    }

    @Test func enter_whenCancelledWhileWaiting_takesNoTurn() async throws {
        let gate = RequestGate(limit: 1)
        #expect(await gate.enter(uid: 1000))
        let waiting = Task { await gate.enter(uid: 1000) }
        while gate.counts(uid: 1000).waiting == 0 { await Task.yield() }
        waiting.cancel()
        #expect(await waiting.value == false)
        #expect(gate.counts(uid: 1000) == (running: 1, waiting: 0))
        gate.leave(uid: 1000)
        #expect(gate.counts(uid: 1000) == (running: 0, waiting: 0))
        #expect(await gate.enter(uid: 1000))
    }

    /// The D-Bus door's synchronous turn (issue 26): taken only when the uid may start at once, never
    /// past its running limit, its pace, or a request of it already waiting, so calls keep their order.
    @Test func tryEnter_takesATurnOnlyWhenTheUIDMayStartAtOnce() async throws {
        // The gate's time stands still but when the test moves it: a slow step cannot open a slot.
        let time = Mutex(ContinuousClock.now)
        let gate = RequestGate(limit: 2, perSecond: 10, burst: 3, now: { time.withLock { $0 } })
        #expect(gate.tryEnter(uid: 1000))
        #expect(gate.tryEnter(uid: 1000))
        #expect(gate.tryEnter(uid: 1000) == false)  // at its limit
        #expect(gate.counts(uid: 1000) == (running: 2, waiting: 0))
        let waiter = Task { await gate.enter(uid: 1000) }
        while gate.counts(uid: 1000).waiting == 0 { await Task.yield() }
        gate.leave(uid: 1000)
        #expect(await waiter.value)  // the turn went to the waiter, not to a later tryEnter
        gate.leave(uid: 1000)
        #expect(gate.tryEnter(uid: 1000))  // the fourth at once: the first and a burst of 3
        gate.leave(uid: 1000)
        #expect(gate.tryEnter(uid: 1000) == false)  // paced: the next slot is 100 ms on
        #expect(gate.counts(uid: 1000) == (running: 1, waiting: 0))
        #expect(gate.tryEnter(uid: 0))  // root: always, and uncounted
        #expect(gate.tryEnter(uid: 1001))  // another uid is not held up
        time.withLock { $0 += .milliseconds(120) }
        #expect(gate.tryEnter(uid: 1000))
        #expect(gate.counts(uid: 1000) == (running: 2, waiting: 0))
    }

    /// 100 a second after a burst of 5: the 6th to 15th requests wait 10 ms each.
    @Test func enter_pastTheBurst_isPacedToTheRate() async throws {
        let gate = RequestGate(limit: 4, perSecond: 100, burst: 5)
        let clock = ContinuousClock()
        let start = clock.now
        for _ in 0..<15 {
            #expect(await gate.enter(uid: 1000))
            gate.leave(uid: 1000)
        }
        #expect(clock.now - start >= .milliseconds(90))
        // Root is never paced, whatever uid 1000 did.
        let rootStart = clock.now
        for _ in 0..<100 { #expect(await gate.enter(uid: 0)) }
        // Paced like uid 1000, these 100 would take about a second; root's take far less.
        #expect(clock.now - rootStart < .milliseconds(900))
    }
}
