// SPDX-License-Identifier: Apache-2.0
// The store's record hook stays one call deep however many records are written (issue 29: a Mutex of
// the bare closure wrapped it in two more thunks at each write, as DeviceHandlerSlots' handlers were).

import LocalAuthCore
import Synchronization
import Testing

@testable import LocalAuthStore

@_silgen_name("backtrace")
private func backtrace(_ buffer: UnsafeMutablePointer<UnsafeMutableRawPointer?>, _ size: Int32) -> Int32

@Suite struct RecordHookTests {
    final class Depth: Sendable {
        let frames = Atomic(0)
        let calls = Atomic(0)
        /// The calling thread's stack depth now, in frames.
        @inline(never) func record() {
            let depth = withUnsafeTemporaryAllocation(of: UnsafeMutableRawPointer?.self, capacity: 8192) {
                Int(backtrace($0.baseAddress!, 8192))
            }
            frames.store(depth, ordering: .relaxed)
            calls.add(1, ordering: .relaxed)
        }
    }

    /// Each record written (every verify writes its count before the answer) went two thunks deeper
    /// and left two 32-byte objects behind: heaptrack found 2,016 of them live after 1,008
    /// authentications; 300 writes called the hook about 600 frames deeper than the first.
    @Test func recordHook_afterThreeHundredRecordsWritten_isCalledAsDeepAsTheFirstTime() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp + "/state")
            let depth = Depth()
            store.onRecordWritten { _, _ in depth.record() }
            try store.saveState(UserAuthState(fingerFailures: 0, lastSeenMs: 0), user: "alice")
            let first = depth.frames.load(ordering: .relaxed)
            for i in 1...300 {
                try store.saveState(UserAuthState(fingerFailures: i % 3, lastSeenMs: Int64(i)), user: "alice")
            }
            let last = depth.frames.load(ordering: .relaxed)
            #expect(depth.calls.load(ordering: .relaxed) == 301)
            #expect(last <= first + 2, "the record hook is called \(last) frames deep, the first time \(first)")
        }
    }
}
