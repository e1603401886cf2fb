// SPDX-License-Identifier: Apache-2.0
import Dispatch
import Glibc
import LocalAuthCore
import LocalAuthProtocol
import Synchronization
import Testing

@testable import LocalAuthStore

/// Crashes simulated at every step of every durable write: afterwards (after a restart, i.e. a new
/// store on the same directory) each file holds the old or the new content, and the domain state
/// differs from the old one whenever the set of prints differs.
@Suite struct AtomicityTests {
    let old = UserAuthState(fingerFailures: 1, lastSeenMs: 100, passcodeHash: sampleHash)
    let new = UserAuthState(fingerFailures: 4, biometryLocked: true, passcodeFailures: 2, lastSeenMs: 200)

    @Test(arguments: crashPoints)
    func saveState_whenCrashAfterStep_holdsExactlyOldOrNewRecord(step: WriteStep, expectNew: Bool) throws {
        try withTemporaryDirectory { tmp in
            try EnrollmentStore(stateDirectory: tmp).saveState(old, user: "alice")
            let restarted = try restartAfterCrash(in: tmp, after: step) { try $0.saveState(new, user: "alice") }
            #expect(try restarted.loadState(user: "alice") == .ok(expectNew ? new : old))
            #expect(
                try names(in: tmp + "/users/alice") == ["state"], "stale temporary files are removed at the first use")
        }
    }

    @Test func saveState_whenCrashBeforeRename_leavesTempFileThatTheAccountsFirstUseRemoves() throws {
        try withTemporaryDirectory { tmp in
            let crash = CrashAfter(steps: 2)
            let crashing = try EnrollmentStore(stateDirectory: tmp, onNotice: nil, writeHook: crash.hook)
            #expect(throws: CrashAfter.crash) { try crashing.saveState(new, user: "alice") }
            #expect(try names(in: tmp + "/users/alice").filter { $0.hasPrefix(".tmp-state-") }.count == 1)
            let log = NoticeLog()
            let restarted = try EnrollmentStore(stateDirectory: tmp, onNotice: log.sink)
            #expect(try restarted.loadState(user: "alice") == .absent)
            #expect(try names(in: tmp + "/users/alice") == [])
            #expect(log.all.contains { $0.contains("temporary files") })
        }
    }

    /// A start touches no account (issue 18: sweeping every account's directory at open made the
    /// cold start grow with the number of accounts); each account is swept at its first use, and
    /// `users/` itself once the daemon serves (issue 29: its listing alone grew the cold start by
    /// 3.5 ms at 10,000 accounts).
    @Test func open_removesTheStateDirectorysStaleTemporaryFiles_andAnAccountsAtItsFirstUse_usersOnceAsked() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp)
            try store.saveState(old, user: "alice")
            try writeRaw([1, 2], to: tmp + "/.tmp-x-1")
            try writeRaw([1, 2], to: tmp + "/users/.tmp-y-2")
            try writeRaw(Array("torn".utf8), to: tmp + "/users/alice/.tmp-state-abcdef")
            try writeRaw([3], to: tmp + "/users/alice/state.corrupt-1")
            let log = NoticeLog()
            let reopened = try EnrollmentStore(stateDirectory: tmp, onNotice: log.sink)
            #expect(try names(in: tmp) == ["users"])
            #expect(try names(in: tmp + "/users") == [".tmp-y-2", "alice"])
            #expect(try names(in: tmp + "/users/alice") == [".tmp-state-abcdef", "state", "state.corrupt-1"])
            // Never an account, while it is there.
            #expect(try reopened.users() == ["alice"])
            #expect(try reopened.loadState(user: "alice") == .ok(old))
            #expect(try names(in: tmp + "/users/alice") == ["state", "state.corrupt-1"])
            #expect(try reopened.removeStaleTemporaryFilesInUsersDirectory() == 1)
            #expect(try names(in: tmp + "/users") == ["alice"])
            #expect(log.all.contains { $0.contains("temporary files left in \(tmp)/users by") }, "\(log.all)")
            #expect(try reopened.removeStaleTemporaryFilesInUsersDirectory() == 0)
        }
    }

    /// Opening the store does not list `users/` (issue 29: the listing made the cold start grow with
    /// the accounts). Seen by the directory's access time, which a listing moves (`relatime`: an
    /// access time older than the modification time is always updated); the second half shows
    /// that this file system does move it, so the first cannot pass for want of it.
    @Test func open_doesNotListTheUsersDirectory() throws {
        try withTemporaryDirectory { tmp in
            try EnrollmentStore(stateDirectory: tmp).saveState(old, user: "alice")
            let users = tmp + "/users"
            setAccessTime(users, seconds: 1)
            let store = try EnrollmentStore(stateDirectory: tmp)
            #expect(try accessTime(users) == 1, "opening the store listed users/")
            try store.removeStaleTemporaryFilesInUsersDirectory()
            #expect(
                try accessTime(users) != 1,
                "a listing does not move the access time here: the check above proves nothing")
        }
    }

    /// The sweep of `users/` beside a write in progress (held at each of its steps in turn, inside
    /// the store's lock) and a record written and not yet synced (a match's, kept open across
    /// requests). With nothing left in `users/` it returns at once, without the store's lock (no
    /// request waits for it), and touches neither. With a leftover there its removal waits for the
    /// write's end; it removes that file and nothing of theirs, and both end as they would have.
    /// Every temporary file of a write is in its target's directory, never in `users/`.
    @Test(arguments: crashPoints)
    func usersSweep_besideWritesInProgress_removesOnlyTheLeftover(step: WriteStep, _: Bool) throws {
        try withTemporaryDirectory { tmp in
            let gate = StepGate(at: step)
            let store = try EnrollmentStore(stateDirectory: tmp, onNotice: nil, writeHook: gate.hook)
            try store.saveState(old, user: "alice")
            try store.saveState(UserAuthState(fingerFailures: 3, lastSeenMs: 150), user: "bob")
            try store.saveState(UserAuthState(lastSeenMs: 200), user: "bob", syncLaterIfRelaxing: true)
            func temporary(_ user: String) throws -> [String] {
                try names(in: tmp + "/users/" + user).filter { $0.hasPrefix(".tmp-") }
            }
            let pending = try temporary("bob")
            #expect(pending.count == 1)

            gate.arm()
            let threads = DispatchGroup()
            DispatchQueue.global().async(group: threads) { try? store.saveState(new, user: "alice") }
            gate.waitUntilHeld()
            let during = try temporary("alice")
            #expect(during.count == (step == .tempWritten || step == .tempSynced ? 1 : 0))
            // On this thread, while the write holds the store's lock: it would never return if it waited.
            #expect(try store.removeStaleTemporaryFilesInUsersDirectory() == 0)
            #expect(try temporary("alice") == during)
            #expect(try temporary("bob") == pending)

            try writeRaw([1, 2], to: tmp + "/users/.tmp-state-0123456789abcdef")
            let swept = Atomic<Int>(-1)
            DispatchQueue.global().async(group: threads) {
                swept.store((try? store.removeStaleTemporaryFilesInUsersDirectory()) ?? -2, ordering: .relaxed)
            }
            gate.release()
            threads.wait()
            #expect(swept.load(ordering: .relaxed) == 1)
            #expect(try names(in: tmp + "/users") == ["alice", "bob"])
            #expect(try temporary("bob") == pending)
            #expect(store.commitPendingRecords() == [])
            #expect(try store.loadState(user: "bob") == .ok(UserAuthState(lastSeenMs: 200)))
            #expect(try store.loadState(user: "alice") == .ok(new))
            #expect(try names(in: tmp + "/users/alice") == ["state"])
        }
    }

    /// The number of hook steps a full `operation` takes, measured without crashing.
    func stepCount(_ operation: (EnrollmentStore) throws -> Void, prepare: (EnrollmentStore) throws -> Void) throws
        -> Int
    {
        try withTemporaryDirectory { tmp in
            try prepare(EnrollmentStore(stateDirectory: tmp))
            let counter = CrashAfter(steps: Int.max)
            try operation(EnrollmentStore(stateDirectory: tmp, onNotice: nil, writeHook: counter.hook))
            return counter.steps.count
        }
    }

    /// Crashes `operation` after each of its steps in turn and checks, after a restart, that the
    /// print set is the old or the new one and that a changed set always has a changed domain state.
    func checkCrashesAtEveryStep(
        prepare: (EnrollmentStore) throws -> Void, operation: (EnrollmentStore) throws -> Void,
        newFingers: [FingerName]
    ) throws {
        let total = try stepCount(operation, prepare: prepare)
        #expect(total >= 6)
        for crashAt in 1...total {
            try withTemporaryDirectory { tmp in
                let setup = try EnrollmentStore(stateDirectory: tmp)
                try prepare(setup)
                let oldFingers = try setup.allPrints(user: "alice").map(\.finger)
                let oldDomain: [UInt8]
                switch try setup.loadState(user: "alice") {
                case .ok(let state): oldDomain = state.domainState
                default: oldDomain = []
                }

                let crashing = try EnrollmentStore(
                    stateDirectory: tmp, onNotice: nil, writeHook: CrashAfter(steps: crashAt).hook)
                #expect(throws: CrashAfter.crash) { try operation(crashing) }

                let restarted = try EnrollmentStore(stateDirectory: tmp)
                let fingers = try restarted.allPrints(user: "alice").map(\.finger)
                #expect(fingers == oldFingers || fingers == newFingers, "crash at step \(crashAt)")
                guard case .ok(let state) = try restarted.loadState(user: "alice") else {
                    Issue.record("record not ok after crash at step \(crashAt)")
                    return
                }
                if fingers != oldFingers {
                    #expect(state.domainState != oldDomain, "set changed under the old domain state at step \(crashAt)")
                }
                #expect(try names(in: tmp + "/users/alice").allSatisfy { !$0.hasPrefix(".tmp-") })
            }
        }
    }

    @Test func addPrint_whenCrashAtAnyStep_neverChangesSetWithoutDomainState() throws {
        try checkCrashesAtEveryStep(
            prepare: { store in
                try store.saveState(old, user: "alice")
                _ = try store.addPrint(samplePrint("left-thumb"), user: "alice")
            },
            operation: { store in _ = try store.addPrint(samplePrint(), user: "alice") },
            newFingers: ["left-thumb", "right-index-finger"])
    }

    @Test func firstAddPrint_whenCrashAtAnyStep_neverChangesSetWithoutDomainState() throws {
        try checkCrashesAtEveryStep(
            prepare: { store in try store.saveState(old, user: "alice") },
            operation: { store in _ = try store.addPrint(samplePrint(), user: "alice") },
            newFingers: ["right-index-finger"])
    }

    @Test func removePrint_whenCrashAtAnyStep_neverChangesSetWithoutDomainState() throws {
        try checkCrashesAtEveryStep(
            prepare: { store in
                _ = try store.addPrint(samplePrint("left-thumb"), user: "alice")
                _ = try store.addPrint(samplePrint(), user: "alice")
            },
            operation: { store in
                _ = try store.removePrint(user: "alice", deviceKey: virtualDevice, finger: "left-thumb")
            },
            newFingers: ["right-index-finger"])
    }

    @Test func removeAllPrints_whenCrashAtAnyStep_neverChangesSetWithoutDomainState() throws {
        // A crash between two unlinks leaves a set that is neither old nor new; the domain state
        // has still changed, which is the property that matters.
        let prepare: (EnrollmentStore) throws -> Void = { store in
            _ = try store.addPrint(samplePrint("left-thumb"), user: "alice")
            _ = try store.addPrint(samplePrint(), user: "alice")
        }
        let total = try stepCount({ _ = try $0.removeAllPrints(user: "alice") }, prepare: prepare)
        for crashAt in 1...total {
            try withTemporaryDirectory { tmp in
                let setup = try EnrollmentStore(stateDirectory: tmp)
                try prepare(setup)
                guard case .ok(let before) = try setup.loadState(user: "alice") else { return }
                let crashing = try EnrollmentStore(
                    stateDirectory: tmp, onNotice: nil, writeHook: CrashAfter(steps: crashAt).hook)
                #expect(throws: CrashAfter.crash) { try crashing.removeAllPrints(user: "alice") }
                let restarted = try EnrollmentStore(stateDirectory: tmp)
                let count = try restarted.allPrints(user: "alice").count
                guard case .ok(let after) = try restarted.loadState(user: "alice") else {
                    Issue.record("record not ok")
                    return
                }
                if count != 2 { #expect(after.domainState != before.domainState, "step \(crashAt)") }
            }
        }
    }

    /// The hook really is on the path: a test that could not fail would be worthless.
    @Test func writeHook_seesEveryStepInOrder() throws {
        try withTemporaryDirectory { tmp in
            let counter = CrashAfter(steps: Int.max)
            let store = try EnrollmentStore(stateDirectory: tmp, onNotice: nil, writeHook: counter.hook)
            try store.saveState(old, user: "alice")
            #expect(counter.steps == [.tempWritten, .tempSynced, .renamed, .directorySynced])
        }
    }
}

/// Rough figures for the report; the bounds only catch a pathological regression.
@Suite struct MeasurementTests {
    static func milliseconds(_ body: () throws -> Void) rethrows -> Double {
        var start = timespec()
        var end = timespec()
        clock_gettime(CLOCK_MONOTONIC, &start)
        try body()
        clock_gettime(CLOCK_MONOTONIC, &end)
        return Double(end.tv_sec - start.tv_sec) * 1000 + Double(end.tv_nsec - start.tv_nsec) / 1_000_000
    }

    @Test func measure_saveStateAndPasscodeHash() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp)
            var saves: [Double] = []
            for index in 0..<21 {
                let state = UserAuthState(fingerFailures: index, lastSeenMs: Int64(index))
                saves.append(try Self.milliseconds { try store.saveState(state, user: "alice") })
            }
            var loads: [Double] = []
            for _ in 0..<21 { loads.append(try Self.milliseconds { _ = try store.loadState(user: "alice") }) }
            var hash = ""
            let hashing = try Self.milliseconds { hash = try PasscodeHasher.hash("measure me") }
            let verifying = Self.milliseconds { _ = PasscodeHasher.verify("measure me", hash: hash) }
            let median = saves.sorted()[saves.count / 2]
            print(
                "measure: saveState median \(median) ms, max \(saves.max()!) ms; loadState median "
                    + "\(loads.sorted()[loads.count / 2]) ms; hash \(hashing) ms; verify \(verifying) ms")
            #expect(median < 1000)
            #expect(hashing < 5000)
        }
    }
}

/// A write hook that holds the first write step `step` (once armed) until released.
private final class StepGate: Sendable {
    let step: WriteStep
    private let armed = Atomic<Bool>(false)
    private let held = DispatchSemaphore(value: 0)
    private let released = DispatchSemaphore(value: 0)

    init(at step: WriteStep) { self.step = step }

    func arm() { armed.store(true, ordering: .sequentiallyConsistent) }
    func waitUntilHeld() { held.wait() }
    func release() { released.signal() }

    var hook: @Sendable (WriteStep) throws(StoreError) -> Void {
        { s throws(StoreError) in
            guard s == self.step,
                self.armed.compareExchange(expected: true, desired: false, ordering: .sequentiallyConsistent).exchanged
            else { return }
            self.held.signal()
            self.released.wait()
        }
    }
}

/// The access time of `path`, in whole seconds.
private func accessTime(_ path: String) throws -> Int {
    var info = stat()
    try #require(stat(path, &info) == 0)
    return info.st_atim.tv_sec
}

/// Sets the access time of `path` (the modification time kept).
private func setAccessTime(_ path: String, seconds: Int) {
    let omit = (1 << 30) - 2  // UTIME_OMIT, a macro Swift does not import
    let times = [timespec(tv_sec: seconds, tv_nsec: 0), timespec(tv_sec: 0, tv_nsec: omit)]
    #expect(utimensat(AT_FDCWD, path, times, 0) == 0)
}
