// SPDX-License-Identifier: Apache-2.0
// The reader's signal handlers stay one call deep however often they are called (issue 29: a Mutex of
// the bare closure wrapped it in two more thunks at each read, and every status report walked them).

import Synchronization
import Testing

@testable import FingerprintReader

@_silgen_name("backtrace")
private func backtrace(_ buffer: UnsafeMutablePointer<UnsafeMutableRawPointer?>, _ size: Int32) -> Int32

@Suite struct DeviceHandlerSlotsTests {
    final class Depth: Sendable {
        let frames = Atomic(0)
        /// The calling thread's stack depth now, in frames.
        @inline(never) func record() {
            let depth = withUnsafeTemporaryAllocation(of: UnsafeMutableRawPointer?.self, capacity: 4096) {
                Int(backtrace($0.baseAddress!, 4096))
            }
            frames.store(depth, ordering: .relaxed)
        }
    }

    @Test func status_calledAfterThreeHundredReports_isAsDeepAsTheFirstCall() {
        let slots = DeviceHandlerSlots()
        let depth = Depth()
        slots.setStatus { _, _, _, _ in depth.record() }
        slots.status?(true, false, 1, false)
        let first = depth.frames.load(ordering: .relaxed)
        for _ in 1...300 { slots.status?(true, false, 1, false) }
        let last = depth.frames.load(ordering: .relaxed)
        #expect(last <= first + 2, "the status handler is called \(last) frames deep, the first call \(first)")
    }

    @Test func removed_calledAfterThreeHundredReads_isAsDeepAsTheFirstCall() {
        let slots = DeviceHandlerSlots()
        let depth = Depth()
        slots.setRemoved { depth.record() }
        slots.removed?()
        let first = depth.frames.load(ordering: .relaxed)
        for _ in 1...300 { slots.removed?() }
        let last = depth.frames.load(ordering: .relaxed)
        #expect(last <= first + 2, "the removed handler is called \(last) frames deep, the first call \(first)")
    }
}
