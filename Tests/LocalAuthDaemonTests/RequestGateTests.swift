// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import LocalAuthDaemon

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
