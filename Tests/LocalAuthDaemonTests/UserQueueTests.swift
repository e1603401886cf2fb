// SPDX-License-Identifier: Apache-2.0
import LocalAuthProtocol
import Synchronization
import Testing

@testable import LocalAuthDaemon

/// One user's requests run one at a time, in arrival order; other users' requests do not wait.
@Suite struct UserQueueTests {
    /// A request body that runs until `release` is called, and logs when it starts and ends.
    final class Gate: Sendable {
        let opened: AsyncStream<Void>
        let door: AsyncStream<Void>.Continuation
        init() { (opened, door) = AsyncStream.makeStream(of: Void.self) }
        func wait() async {
            for await _ in opened { return }
        }
        func release() { door.yield() }
    }

    final class Log: Sendable {
        private let entries = Mutex<[String]>([])
        func add(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    /// Waits (bounded: 30,000 sleeps of 1 ms, a hang's bound only) until `condition` holds: the
    /// queue has no event to await from outside.
    static func eventually(_ condition: () -> Bool) async throws {
        for _ in 0..<30_000 {
            if condition() { return }
            try await Task.sleep(for: .milliseconds(1))
        }
        Issue.record("condition never held")
    }

    @Test func serialize_forOneUser_runsRequestsOneAtATimeInArrivalOrder() async throws {
        let queue = UserQueue()
        let log = Log()
        let gate = Gate()
        let first = Task {
            await queue.serialize("alice") {
                log.add("first starts")
                await gate.wait()
                log.add("first ends")
            }
        }
        try await Self.eventually { queue.waiting(for: "alice") == 0 }
        let second = Task { await queue.serialize("alice") { log.add("second runs") } }
        try await Self.eventually { queue.waiting(for: "alice") == 1 }
        let third = Task { await queue.serialize("alice") { log.add("third runs") } }
        try await Self.eventually { queue.waiting(for: "alice") == 2 }
        #expect(log.all == ["first starts"])
        gate.release()
        _ = await (first.value, second.value, third.value)
        #expect(log.all == ["first starts", "first ends", "second runs", "third runs"])
        #expect(queue.waiting(for: "alice") == nil)
    }

    @Test func serialize_forAnotherUser_doesNotWaitForTheFirstUsersRequest() async throws {
        let queue = UserQueue()
        let gate = Gate()
        let alice = Task { await queue.serialize("alice") { await gate.wait() } }
        try await Self.eventually { queue.waiting(for: "alice") == 0 }
        let bob = await queue.serialize("bob") { "bob served" }
        #expect(bob == "bob served")
        #expect(queue.waiting(for: "alice") == 0)
        gate.release()
        await alice.value
        #expect(queue.waiting(for: "alice") == nil)
    }
}

/// The queue never holds a request past its deadline, nor behind the reader.
@Suite struct UserQueueDeadlineTests {
    @Test func enter_whenTheDeadlinePassesWhileWaiting_answersTimedOut() async throws {
        let queue = UserQueue()
        let gate = UserQueueTests.Gate()
        let first = Task { await queue.serialize("alice") { await gate.wait() } }
        try await UserQueueTests.eventually { queue.waiting(for: "alice") == 0 }
        let turn = await queue.serialize("alice", wantsReader: false, deadlineMs: 50) {
            UserQueue.Turn.granted
        } refused: {
            $0
        }
        #expect(turn == .timedOut)
        #expect(queue.waiting(for: "alice") == 0)
        gate.release()
        await first.value
    }

    @Test func enter_whenTheSameUsersRequestTakesTheReader_answersThoseThatWantItAtOnce() async throws {
        let queue = UserQueue()
        let gate = UserQueueTests.Gate()
        let first = Task { await queue.serialize("alice") { await gate.wait() } }
        try await UserQueueTests.eventually { queue.waiting(for: "alice") == 0 }
        let wantsReader = Task {
            await askForTheReader(queue)
        }
        let management = Task {
            await queue.serialize("alice", wantsReader: false, deadlineMs: 60_000) {
                UserQueue.Turn.granted
            } refused: {
                $0
            }
        }
        try await UserQueueTests.eventually { queue.waiting(for: "alice") == 2 }
        let label = RequestLabel(program: "sudo", account: "alice")
        queue.readerTaken(by: label)
        #expect(await wantsReader.value == .readerBusy(label))
        // A request that wants the reader and comes now is answered without waiting.
        let late = await askForTheReader(queue)
        #expect(late == .readerBusy(label))
        gate.release()
        #expect(await management.value == .granted)
        await first.value
    }

    /// An evaluation behind a right's use that holds the reader is not told "busy": the right's use is
    /// told to yield, and the evaluation gets the turn it leaves. Every other request that wants the
    /// reader (another right's use) is still told at once whose request has it (issue 26).
    @Test func evaluation_behindARightsUseHoldingTheReader_makesItYield_andGetsTheTurn() async throws {
        let queue = UserQueue()
        let gate = UserQueueTests.Gate()
        let yielded = UserQueueTests.Log()
        let rightUse = Task {
            await queue.serialize("alice", wantsReader: true, deadlineMs: 60_000) {
                await gate.wait()
                return UserQueue.Turn.granted
            } refused: {
                $0
            }
        }
        try await UserQueueTests.eventually { queue.waiting(for: "alice") == 0 }
        let label = theVaultsRightTakesTheReader(queue, yielded, gate)
        let otherRightUse = await askForTheReader(queue)
        #expect(otherRightUse == .readerBusy(label))
        #expect(yielded.all.isEmpty)
        let evaluation = await askForTheReader(queue, precedesRightUse: true)
        #expect(evaluation == .granted)
        #expect(yielded.all == ["yield"])
        if yielded.all.isEmpty { gate.release() }  // a failure above must not hang the suite
        #expect(await rightUse.value == .granted)
    }

    /// An evaluation waiting already when a right's use takes the reader makes it yield at once; behind
    /// any other request's hold (sudo's), an evaluation is told "busy" as before.
    @Test func evaluation_waitingWhenARightsUseTakesTheReader_makesItYield_butNotAnEvaluationsHold() async throws {
        let queue = UserQueue()
        let gate = UserQueueTests.Gate()
        let yielded = UserQueueTests.Log()
        let first = Task { await queue.serialize("alice") { await gate.wait() } }
        try await UserQueueTests.eventually { queue.waiting(for: "alice") == 0 }
        let evaluation = Task {
            await askForTheReader(queue, precedesRightUse: true)
        }
        try await UserQueueTests.eventually { queue.waiting(for: "alice") == 1 }
        _ = theVaultsRightTakesTheReader(queue, yielded, gate)
        #expect(await evaluation.value == .granted)
        #expect(yielded.all == ["yield"])
        if yielded.all.isEmpty { gate.release() }  // a failure above must not hang the suite
        await first.value

        let sudo = RequestLabel(program: "/usr/bin/sudo", account: "alice")
        let second = Task { await queue.serialize("alice") { await gate.wait() } }
        try await UserQueueTests.eventually { queue.waiting(for: "alice") == 0 }
        queue.readerTaken(by: sudo) { yielded.add("sudo yielded") }
        let behindSudo = await askForTheReader(queue, precedesRightUse: true)
        #expect(behindSudo == .readerBusy(sudo))
        #expect(yielded.all == ["yield"])
        gate.release()
        await second.value
    }
}

/// Alice's request for the reader (an evaluation before a right's use with `precedesRightUse`):
/// granted, or why not.
private func askForTheReader(_ queue: UserQueue, precedesRightUse: Bool = false) async -> UserQueue.Turn {
    await queue.serialize("alice", wantsReader: true, precedesRightUse: precedesRightUse, deadlineMs: 60_000) {
        UserQueue.Turn.granted
    } refused: {
        $0
    }
}

/// The vault's right, used by python, takes alice's reader; told to yield, it notes "yield" and
/// opens the gate it waits at.
private func theVaultsRightTakesTheReader(
    _ queue: UserQueue, _ yielded: UserQueueTests.Log, _ gate: UserQueueTests.Gate
) -> RequestLabel {
    let label = RequestLabel(program: "/usr/bin/python3.11", account: "alice", right: "vault")
    queue.readerTaken(by: label) {
        yielded.add("yield")
        gate.release()
    }
    return label
}
