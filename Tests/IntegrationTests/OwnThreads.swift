// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

/// Runs every test of a suite off Swift's cooperative pool: each piece of the test's async work
/// runs on a thread of its own. The harness's calls (perform, simulate, ctl, the polling loops)
/// block while they wait on the daemon; on the cooperative pool, which is as wide as the machine
/// has cores (two here), a few such tests at once held every thread, and a test waiting for an
/// event resumed only after its request had timed out: ReaderFaultTests' verify waited 20 s for
/// an `ERROR 5` that the starved test sent after the timeout (CI on 5033bca; reproduced here
/// with one busy core). Off the pool, a blocked test holds its own thread only.
struct OwnThreads: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(ThreadPerJob.shared) { try await function() }
    }
}

extension Trait where Self == OwnThreads {
    /// Each test of the suite runs off the cooperative pool (`OwnThreads`).
    static var onOwnThreads: Self { OwnThreads() }
}

/// A task executor that runs each job it is given on a new thread. A task's jobs never run at
/// once, so a test still runs one step at a time; a step that blocks holds only its own thread.
final class ThreadPerJob: TaskExecutor {
    static let shared = ThreadPerJob()

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        Thread.detachNewThread { job.runSynchronously(on: executor) }
    }
}
