// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import LocalAuthDaemon

#if canImport(Glibc)
    import Glibc
#endif

/// The authorizations of rights held per process (`RightGrants`); the real daemon's use of them is in
/// LocalAuthenticationTests.LARightTests.
@Suite struct RightGrantsTests {
    @Test func startTime_ofAStatLine_isField22_whateverTheCommandHolds() {
        let stat = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10"
        #expect(RightGrants.parseStartTime(stat: stat) == 987_654)
        #expect(RightGrants.parseStartTime(stat: "4242 (x) S 1 2") == nil)
        #expect(RightGrants.startTime(pid: getpid()) != nil)
    }

    @Test func grant_isHeldByThatProcessForThatRightOnly_untilRevoked() throws {
        let grants = RightGrants()
        let holder = try #require(RightGrants.holder(user: "alice", identifier: "vault", pid: getpid()))
        let key: [UInt8] = [1, 2, 3]
        grants.grant(holder, privateKey: key, nowMs: 0)
        #expect(grants.holds(holder, privateKey: key))
        // Another right saved under the same identifier (another key) is not authorized.
        #expect(!grants.holds(holder, privateKey: [9]))
        // A process that reused the pid (another start time), another identifier, another account.
        let later = RightGrants.Holder(
            user: "alice", identifier: "vault", pid: getpid(), startTime: holder.startTime + 1)
        #expect(!grants.holds(later, privateKey: key))
        #expect(
            !grants.holds(
                try #require(RightGrants.holder(user: "alice", identifier: "other", pid: getpid())), privateKey: key))
        #expect(
            !grants.holds(
                try #require(RightGrants.holder(user: "bob", identifier: "vault", pid: getpid())), privateKey: key))
        grants.revoke(holder)
        #expect(!grants.holds(holder, privateKey: key))
    }

    @Test func grants_areBounded() throws {
        let grants = RightGrants()
        let first = try #require(RightGrants.holder(user: "alice", identifier: "r0", pid: getpid()))
        grants.grant(first, privateKey: [0], nowMs: 0)
        for i in 1...RightGrants.capacity {
            let holder = try #require(RightGrants.holder(user: "alice", identifier: "r\(i)", pid: getpid()))
            grants.grant(holder, privateKey: [0], nowMs: Int64(i))
        }
        #expect(!grants.holds(first, privateKey: [0]))  // the oldest went
        let last = try #require(
            RightGrants.holder(user: "alice", identifier: "r\(RightGrants.capacity)", pid: getpid()))
        #expect(grants.holds(last, privateKey: [0]))
    }
}
