// SPDX-License-Identifier: Apache-2.0
import LocalAuthProtocol
import Testing

@testable import LocalAuthDaemon

/// The reader held by one request at a time, and shared between accounts (issue 13, C2 and M1).
@Suite struct ReaderLeaseTests {
    static func holder(_ id: UInt64, _ account: String) -> ReaderLease.Holder {
        ReaderLease.Holder(id: id, label: RequestLabel(program: "sudo", account: account))
    }

    @Test func lease_whileOneRequestHoldsTheReader_anotherIsToldWhose() {
        let lease = ReaderLease(queue: UserQueue())
        #expect(lease.take(Self.holder(1, "alice"), nowMs: 0, shareMs: nil) == .taken(forMs: nil))
        #expect(lease.take(Self.holder(2, "bob"), nowMs: 5, shareMs: nil) == .busy(Self.holder(1, "alice")))
        lease.release(2, nowMs: 6)  // not the holder: nothing happens
        #expect(lease.holder == Self.holder(1, "alice"))
        lease.release(1, nowMs: 7)
        #expect(lease.take(Self.holder(2, "bob"), nowMs: 8, shareMs: nil) == .taken(forMs: nil))
    }

    @Test func lease_anAccountsShare_isItsTimeOnTheReaderInTheLastWindow() {
        let lease = ReaderLease(queue: UserQueue())
        let share: Int64 = 10_000  // a window of 20 s
        #expect(lease.take(Self.holder(1, "alice"), nowMs: 0, shareMs: share) == .taken(forMs: 10_000))
        lease.release(1, nowMs: 4000)
        #expect(lease.take(Self.holder(2, "alice"), nowMs: 5000, shareMs: share) == .taken(forMs: 6000))
        lease.release(2, nowMs: 11_000)  // 4 s + 6 s: the whole share
        #expect(lease.take(Self.holder(3, "alice"), nowMs: 12_000, shareMs: share) == .shareUsed(retryInMs: 8000))
        // Another account has the reader meanwhile.
        #expect(lease.take(Self.holder(4, "bob"), nowMs: 12_000, shareMs: share) == .taken(forMs: 10_000))
        lease.release(4, nowMs: 13_000)
        // Once the first use has left the window, alice has room again.
        #expect(lease.take(Self.holder(5, "alice"), nowMs: 24_000, shareMs: share) == .taken(forMs: 4000))
    }
}
