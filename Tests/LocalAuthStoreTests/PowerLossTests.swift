// SPDX-License-Identifier: Apache-2.0
import Glibc
import LocalAuthCore
import Synchronization
import Testing

@testable import LocalAuthStore

/// Power loss, modelled from the store's own write steps: what a file system may keep of the
/// user's record after the power goes, at any moment. A file's bytes survive only once fsynced
/// (`tempSynced`); a rename survives only once its directory is fsynced (`directorySynced`); until
/// then the name may point at any record renamed into place since the last directory sync, or at
/// the one that sync made durable (a file system that keeps renames in order keeps one of them; one
/// that does not may keep any). Every such record must be whole and at least as strict as every
/// state the store acknowledged since: a crash never resets a lockout, power loss included.
@Suite struct PowerLossTests {
    /// What power loss could leave, updated at each write step (the hook runs in the store's lock).
    final class PowerLossModel: Sendable {
        let statePath: String
        /// `nil` in the list: a record renamed into place before its bytes were synced (torn).
        private let candidates = Mutex<[UserAuthState?]>([])
        private let synced = Mutex(false)
        let directorySyncs = Atomic<Int>(0)

        init(statePath: String) { self.statePath = statePath }

        var survivors: [UserAuthState?] { candidates.withLock { $0 } }

        var hook: @Sendable (WriteStep) throws(StoreError) -> Void {
            { step throws(StoreError) in
                switch step {
                case .tempWritten: self.synced.withLock { $0 = false }
                case .tempSynced: self.synced.withLock { $0 = true }
                case .renamed:
                    let whole = self.synced.withLock { $0 }
                    let now = whole ? self.current() : nil
                    self.candidates.withLock { $0.append(now) }
                case .directorySynced:
                    let now = self.current()
                    self.candidates.withLock { $0 = [now] }
                    self.directorySyncs.add(1, ordering: .relaxed)
                case .removed:
                    break
                }
            }
        }

        /// The record the name points at now (the page cache: what a `kill -9` would leave).
        private func current() -> UserAuthState? {
            guard case .bytes(let bytes, _) = Sys.readFile(statePath, limit: 16 * 1024),
                case .success(let state) = StateRecord.decode(bytes)
            else { return nil }
            return state
        }
    }

    /// Written out here, apart from `LockoutRules.onlyRelaxes`, so that a mistake there is caught:
    /// `survivor` holds every count, lockout and delay of `acknowledged` (at any clock reading) and
    /// the same passcode and domain state.
    static func holds(_ survivor: UserAuthState, everythingOf acknowledged: UserAuthState) -> Bool {
        let config = LockoutConfig()
        let delayHeld = [Int64(0), 1_000, 50_000, 1_000_000, 10_000_000].allSatisfy { now in
            PasscodeDelay.remainingMs(state: survivor, nowMs: now)
                >= PasscodeDelay.remainingMs(state: acknowledged, nowMs: now)
        }
        return survivor.fingerFailures >= acknowledged.fingerFailures
            && (LockoutRules.biometryLocked(survivor, config: config)
                || !LockoutRules.biometryLocked(acknowledged, config: config))
            && survivor.passcodeFailures >= acknowledged.passcodeFailures && delayHeld
            && survivor.passcodeHash == acknowledged.passcodeHash && survivor.domainState == acknowledged.domainState
    }

    /// A long seeded walk through what evaluations and passcode changes write (the `LockoutRules`
    /// an evaluator applies, with the clock moving on), each step saved as the daemon saves it.
    @Test func saveState_whenPowerIsLostAfterAnyWrite_leavesAWholeRecordAtLeastAsStrictAsEveryAcknowledgedOne() throws {
        try withTemporaryDirectory { tmp in
            let model = PowerLossModel(statePath: tmp + "/users/alice/state")
            let store = try EnrollmentStore(stateDirectory: tmp, onNotice: nil, writeHook: model.hook)
            let config = LockoutConfig(fingerAttempts: 5, passcodeAttempts: 2, passcodeDelays: [1, 5])
            var state = UserAuthState(lastSeenMs: 1_000, passcodeHash: sampleHash)
            try store.saveState(state, user: "alice")
            var generator = SeededGenerator(seed: 20_261_124)
            var acknowledged: [UserAuthState] = [state]
            var relaxing = 0
            for step in 0..<600 {
                let before = state
                state.lastSeenMs += Int64.random(in: 0...3_000, using: &generator)
                switch Int.random(in: 0..<10, using: &generator) {
                case 0, 1, 2:
                    // A verify: the touch counted when the reader reports it (ADR 0008), then a match or a miss.
                    LockoutRules.fingerAttemptStarted(&state)
                    try store.saveState(state, user: "alice")
                    acknowledged.append(state)
                    if Bool.random(using: &generator) {
                        LockoutRules.fingerMatched(&state)
                    } else {
                        LockoutRules.fingerMissed(&state, config: config)
                    }
                case 3:
                    LockoutRules.fingerAttemptStarted(&state)
                    try store.saveState(state, user: "alice")
                    acknowledged.append(state)
                    LockoutRules.fingerAttemptTakenBack(&state)  // touched, then cancelled, timed out, reader gone
                case 4, 5:
                    LockoutRules.passcodeAttemptStarted(&state, config: config)
                case 6:
                    let counted = state
                    LockoutRules.passcodeAttemptStarted(&state, config: config)
                    try store.saveState(state, user: "alice")
                    acknowledged.append(state)
                    LockoutRules.passcodeAttemptTakenBack(&state, to: counted)  // the same wrong one again
                case 7:
                    LockoutRules.passcodeAccepted(&state)
                case 8:
                    LockoutRules.passcodeReplaced(&state)
                    state.passcodeHash = state.passcodeHash == sampleHash ? otherHash : sampleHash
                default:
                    break  // the clock alone (a wait for a finger that never came writes nothing)
                }
                if LockoutRules.onlyRelaxes(state, from: before) { relaxing += 1 }
                try store.saveState(state, user: "alice")
                acknowledged.append(state)
                let survivors = model.survivors
                #expect(!survivors.isEmpty)
                for survivor in survivors {
                    guard let survivor else {
                        Issue.record("step \(step): a record renamed into place before its bytes were synced")
                        return
                    }
                    guard Self.holds(survivor, everythingOf: state) else {
                        Issue.record(
                            "step \(step): power loss could leave \(survivor), below the acknowledged \(state)")
                        return
                    }
                }
            }
            // The walk did what it claims: resets that skipped the directory's fsync, and lockouts.
            #expect(relaxing > 100)
            #expect(model.directorySyncs.load(ordering: .relaxed) < acknowledged.count - 100)
            #expect(acknowledged.contains { $0.biometryLocked })
            #expect(acknowledged.contains { $0.passcodeLockedUntilMs > $0.lastSeenMs })
        }
    }

    /// A verify's two writes: the touch's count is durable (file, rename, directory); the
    /// match's reset is renamed into place, its bytes synced, the directory left for the next
    /// durable write.
    @Test func saveState_forAVerifyThatMatches_syncsTheAttemptsDirectoryButNotTheResets() throws {
        try withTemporaryDirectory { tmp in
            try EnrollmentStore(stateDirectory: tmp).saveState(
                UserAuthState(fingerFailures: 2, lastSeenMs: 100), user: "alice")
            let counter = CrashAfter(steps: Int.max)
            let store = try EnrollmentStore(stateDirectory: tmp, onNotice: nil, writeHook: counter.hook)
            try store.saveState(UserAuthState(fingerFailures: 3, lastSeenMs: 200), user: "alice")
            #expect(counter.steps == [.tempWritten, .tempSynced, .renamed, .directorySynced])
            try store.saveState(UserAuthState(fingerFailures: 0, lastSeenMs: 210), user: "alice")
            #expect(
                counter.steps == [
                    .tempWritten, .tempSynced, .renamed, .directorySynced, .tempWritten, .tempSynced, .renamed,
                ])
            #expect(try store.loadState(user: "alice") == .ok(UserAuthState(lastSeenMs: 210)))
        }
    }

    /// alice's record as it is on disk, read without a store (which would sweep temporary files).
    static func onDisk(_ directory: String) -> UserAuthState? {
        guard case .bytes(let bytes, _) = Sys.readFile(directory + "/users/alice/state", limit: 1 << 14),
            case .success(let state) = StateRecord.decode(bytes)
        else { return nil }
        return state
    }

    /// Issue 29: a match's record (it only relaxes) is written at once and synced and renamed by
    /// `commitPendingRecords()`, or before that user is read again; until then the previous record
    /// is in place. A raising record asked the same way is still durable at once.
    @Test func saveState_syncLaterIfRelaxing_leavesThePreviousRecordUntilCommittedOrReadAgain() throws {
        try withTemporaryDirectory { tmp in
            let counter = CrashAfter(steps: Int.max)
            let store = try EnrollmentStore(stateDirectory: tmp, onNotice: nil, writeHook: counter.hook)
            try store.saveState(UserAuthState(fingerFailures: 2, lastSeenMs: 100), user: "alice")
            try store.saveState(
                UserAuthState(fingerFailures: 3, lastSeenMs: 150), user: "alice", syncLaterIfRelaxing: true)
            #expect(
                counter.steps == [.tempWritten, .tempSynced, .renamed, .directorySynced] + [
                    .tempWritten, .tempSynced, .renamed, .directorySynced,
                ])
            try store.saveState(UserAuthState(lastSeenMs: 200), user: "alice", syncLaterIfRelaxing: true)
            #expect(counter.steps.count == 9 && counter.steps.last == .tempWritten)
            // On disk, the previous record: nothing renamed yet.
            #expect(Self.onDisk(tmp) == UserAuthState(fingerFailures: 3, lastSeenMs: 150))
            #expect(store.commitPendingRecords().isEmpty)
            #expect(counter.steps.suffix(3) == [.tempWritten, .tempSynced, .renamed])
            #expect(Self.onDisk(tmp) == UserAuthState(lastSeenMs: 200))
            // Pending again, then read through the store itself: put in place first.
            try store.saveState(UserAuthState(lastSeenMs: 300), user: "alice", syncLaterIfRelaxing: true)
            #expect(try store.loadState(user: "alice") == .ok(UserAuthState(lastSeenMs: 300)))
            #expect(store.commitPendingRecords().isEmpty)
            let left = try Sys.listDirectory(tmp + "/users/alice")
            #expect(!left.contains { $0.hasPrefix(".tmp-") }, "\(left)")
        }
    }

    @Test(arguments: [
        ("a count raised", UserAuthState(fingerFailures: 3, lastSeenMs: 100), false),
        ("biometrics locked", UserAuthState(fingerFailures: 2, biometryLocked: true, lastSeenMs: 100), false),
        ("a passcode attempt", UserAuthState(fingerFailures: 2, passcodeFailures: 2, lastSeenMs: 100), false),
        (
            "a delay", UserAuthState(fingerFailures: 2, passcodeFailures: 1, passcodeLockedUntilMs: 5, lastSeenMs: 100),
            false
        ),
        ("the clock set back", UserAuthState(fingerFailures: 2, passcodeFailures: 1, lastSeenMs: 99), false),
        (
            "a new passcode",
            UserAuthState(fingerFailures: 2, passcodeFailures: 1, lastSeenMs: 100, passcodeHash: sampleHash), false
        ),
        ("a match", UserAuthState(fingerFailures: 0, passcodeFailures: 1, lastSeenMs: 150), true),
        ("a correct passcode", UserAuthState(lastSeenMs: 150), true),
        ("the clock alone", UserAuthState(fingerFailures: 2, passcodeFailures: 1, lastSeenMs: 150), true),
    ])
    func onlyRelaxes_isTrueOnlyWhenLosingTheWriteIsTheStrictSide(what: String, new: UserAuthState, relaxes: Bool) {
        let old = UserAuthState(fingerFailures: 2, passcodeFailures: 1, lastSeenMs: 100)
        #expect(LockoutRules.onlyRelaxes(new, from: old) == relaxes, "\(what)")
        if relaxes { #expect(Self.holds(old, everythingOf: new), "\(what)") }
    }
}

private let otherHash = "$y$j9T$abcdefghijklmnopqrstu.$ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijk/1"

/// SplitMix64: a fixed sequence for a reproducible walk.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
