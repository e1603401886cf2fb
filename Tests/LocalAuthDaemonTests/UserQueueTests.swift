// SPDX-License-Identifier: Apache-2.0
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

    /// Waits (bounded) until `condition` holds: the queue has no event to await from outside.
    static func eventually(_ condition: () -> Bool) async throws {
        for _ in 0..<5000 {
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
