// SPDX-License-Identifier: Apache-2.0
import Glibc
import LocalAuthCore
import LocalAuthProtocol
import Testing

@testable import LocalAuthStore

@Suite struct EnrollmentStoreTests {
    let counters = UserAuthState(
        fingerFailures: 2, biometryLocked: false, passcodeFailures: 6, passcodeLockedUntilMs: 1_760_000_060_000,
        lastSeenMs: 1_760_000_000_000, passcodeHash: sampleHash)

    // MARK: State directory

    @Test func init_whenStateDirectoryMissing_createsItWithMode0700() throws {
        try withTemporaryDirectory { tmp in
            _ = try EnrollmentStore(stateDirectory: tmp + "/state")
            #expect(try permissions(tmp + "/state") == 0o700)
            #expect(try permissions(tmp + "/state/users") == 0o700)
        }
    }

    /// Opening a store at `path` throws `.unsafeStateDirectory`, with a reason that says each of `words`.
    static func expectRefused(
        _ path: String, saying words: String..., sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(sourceLocation: sourceLocation) {
            try EnrollmentStore(stateDirectory: path)
        } throws: { error in
            guard case .unsafeStateDirectory(let why) = error as? StoreError else { return false }
            return words.allSatisfy { why.contains($0) }
        }
    }

    @Test(arguments: [0o777 as mode_t, 0o770, 0o720, 0o702, 0o1777])
    func init_whenStateDirectoryWritableByOthers_refuses(mode: mode_t) throws {
        try withTemporaryDirectory { tmp in
            try #require(chmod(tmp, mode) == 0)
            Self.expectRefused(tmp, saying: "writable")
        }
    }

    /// Issue 13, M4: an existing directory is never chmodded; a wrong mode is refused and left.
    @Test func init_whenStateDirectoryReadableByOthers_refusesAndLeavesItAsItIs() throws {
        try withTemporaryDirectory { tmp in
            try #require(chmod(tmp, 0o755) == 0)
            Self.expectRefused(tmp, saying: "readable by others", "must be 0700")
            #expect(try permissions(tmp) == 0o755)
        }
    }

    /// Issue 13, M4: a symlink at the state directory's path (a user's, in /tmp, pointing at
    /// /etc) made root chmod its target to 0700. Refused, and the target is left as it was.
    @Test func init_whenStateDirectoryIsASymlink_refusesAndLeavesTheTargetAsItIs() throws {
        try withTemporaryDirectory { tmp in
            try #require(mkdir(tmp + "/etc", 0o755) == 0)
            try #require(chmod(tmp + "/etc", 0o755) == 0)
            try #require(symlink(tmp + "/etc", tmp + "/la-state") == 0)
            Self.expectRefused(tmp + "/la-state", saying: "symbolic link")
            #expect(try permissions(tmp + "/etc") == 0o755)
            #expect(try names(in: tmp + "/etc").isEmpty)
        }
    }

    @Test func init_whenADirectoryAboveIsWritableByOthers_refuses() throws {
        try withTemporaryDirectory { tmp in
            try #require(mkdir(tmp + "/open", 0o777) == 0 && chmod(tmp + "/open", 0o777) == 0)
            Self.expectRefused(tmp + "/open/state", saying: "\(tmp)/open is writable by others")
            #expect(try Sys.lstatInfo(tmp + "/open/state") == nil)
        }
    }

    /// /tmp is writable by all but sticky: a directory of root's in it cannot be replaced.
    @Test func init_belowAStickyDirectory_isAccepted() throws {
        try withTemporaryDirectory { tmp in
            try #require(mkdir(tmp + "/sticky", 0o1777) == 0 && chmod(tmp + "/sticky", 0o1777) == 0)
            _ = try EnrollmentStore(stateDirectory: tmp + "/sticky/state")
            #expect(try permissions(tmp + "/sticky/state") == 0o700)
        }
    }

    @Test(.enabled(if: isRoot, "needs root to give a symlink away"))
    func init_whenAPathComponentIsAnotherUsersSymlink_refuses() throws {
        try withTemporaryDirectory { tmp in
            try #require(chmod(tmp, 0o1777) == 0)
            try #require(mkdir(tmp + "/real", 0o755) == 0)
            try #require(symlink(tmp + "/real", tmp + "/link") == 0)
            try #require(lchown(tmp + "/link", 4242, 4242) == 0)
            Self.expectRefused(tmp + "/link/state", saying: "symbolic link owned by uid 4242")
            #expect(try names(in: tmp + "/real").isEmpty)
        }
    }

    @Test func init_whenStateDirectoryIsAFile_refuses() throws {
        try withTemporaryDirectory { tmp in
            try writeRaw([1], to: tmp + "/file")
            #expect(throws: StoreError.self) { try EnrollmentStore(stateDirectory: tmp + "/file") }
        }
    }

    @Test(.enabled(if: isRoot, "needs root to give the directory away"))
    func init_whenStateDirectoryNotOwnedByRoot_refuses() throws {
        try withTemporaryDirectory { tmp in
            try #require(chown(tmp, 4242, 4242) == 0)
            Self.expectRefused(tmp, saying: "owned by uid 4242")
        }
    }

    // MARK: Records

    @Test func loadState_whenUserUnknown_returnsAbsent() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp)
            #expect(try store.loadState(user: "alice") == .absent)
            #expect(try store.users() == [])
        }
    }

    @Test func saveState_thenLoadState_roundTripsAcrossReopen() throws {
        try withTemporaryDirectory { tmp in
            try EnrollmentStore(stateDirectory: tmp).saveState(counters, user: "alice")
            #expect(try EnrollmentStore(stateDirectory: tmp).loadState(user: "alice") == .ok(counters))
        }
    }

    @Test func saveState_createsDirectories0700AndFiles0600() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp)
            try store.saveState(counters, user: "alice")
            _ = try store.addPrint(samplePrint(), user: "alice")
            #expect(try permissions(tmp + "/users/alice") == 0o700)
            for name in try names(in: tmp + "/users/alice") {
                #expect(try permissions(tmp + "/users/alice/" + name) == 0o600, "\(name)")
            }
            #expect(try names(in: tmp + "/users/alice").count == 2)
            #expect(try store.users() == ["alice"])
        }
    }

    @Test func saveState_whenCountersChange_keepsDomainState() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp)
            let enrolled = try store.addPrint(samplePrint(), user: "alice")
            var next = enrolled
            next.fingerFailures = 4
            try store.saveState(next, user: "alice")
            guard case .ok(let loaded) = try store.loadState(user: "alice") else {
                Issue.record("record not ok")
                return
            }
            #expect(loaded.fingerFailures == 4)
            #expect(loaded.domainState == enrolled.domainState)
        }
    }

    @Test func saveState_whenCallerHoldsStaleDomainState_keepsTheStoredOne() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp)
            let stale = try store.addPrint(samplePrint(), user: "alice")
            let current = try store.addPrint(samplePrint("left-thumb"), user: "alice")
            try store.saveState(stale, user: "alice")
            guard case .ok(let loaded) = try store.loadState(user: "alice") else {
                Issue.record("record not ok")
                return
            }
            #expect(loaded.domainState == current.domainState)
            #expect(loaded.domainState != stale.domainState)
        }
    }

    @Test(arguments: [
        "", "../x", "a/b", "-x", ".x", ".", "..", "a b", "é", "a\u{0}b", String(repeating: "a", count: 65),
    ])
    func operations_whenUserNameInvalid_throwInvalidUserName(name: String) throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp)
            #expect(throws: StoreError.invalidUserName(name)) { try store.loadState(user: name) }
            #expect(throws: StoreError.invalidUserName(name)) { try store.saveState(UserAuthState(), user: name) }
            #expect(throws: StoreError.invalidUserName(name)) { try store.addPrint(samplePrint(), user: name) }
            #expect(throws: StoreError.invalidUserName(name)) { try store.allPrints(user: name) }
            #expect(throws: StoreError.invalidUserName(name)) { try store.resetState(user: name) }
            #expect(try names(in: tmp + "/users") == [])
        }
    }

    @Test(arguments: ["a", "alice", "a.b_c-1", "0", String(repeating: "z", count: 64)])
    func saveState_whenUserNameValid_accepts(name: String) throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp)
            try store.saveState(counters, user: name)
            #expect(try store.loadState(user: name) == .ok(counters))
        }
    }

    // MARK: Corrupt records fail closed

    /// Each damage must read as `.corrupt`, never as `.absent` or a record without lockout, and
    /// must leave other users readable.
    @Test(arguments: ["truncated", "garbage", "checksum", "empty", "mode0644", "symlink", "directory"])
    func loadState_whenRecordDamaged_returnsCorruptAndOtherUsersLoad(damage: String) throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp)
            var locked = counters
            locked.biometryLocked = true
            try store.saveState(locked, user: "alice")
            try store.saveState(counters, user: "bob")
            let path = tmp + "/users/alice/state"
            let good = try readBytes(path)
            switch damage {
            case "truncated": try writeRaw(Array(good.prefix(good.count / 2)), to: path)
            case "garbage": try writeRaw((0..<200).map { UInt8(truncatingIfNeeded: $0 * 31) }, to: path)
            case "checksum":
                var text = String(decoding: good, as: UTF8.self)
                text = text.replacingOccurrences("biometryLocked=1", with: "biometryLocked=0")
                try writeRaw(Array(text.utf8), to: path)
            case "empty": try writeRaw([], to: path)
            case "mode0644": try #require(chmod(path, 0o644) == 0)
            case "symlink":
                try writeRaw(good, to: tmp + "/elsewhere")
                try #require(unlink(path) == 0 && symlink(tmp + "/elsewhere", path) == 0)
            case "directory": try #require(unlink(path) == 0 && mkdir(path, 0o700) == 0)
            default: Issue.record("unknown damage")
            }
            guard case .corrupt(let reason) = try store.loadState(user: "alice") else {
                Issue.record("damaged record (\(damage)) did not read as corrupt")
                return
            }
            #expect(reason.contains("alice"))
            #expect(try store.loadState(user: "bob") == .ok(counters))
        }
    }

    @Test(.enabled(if: isRoot, "needs root to give the file away"))
    func loadState_whenRecordOwnedByAnotherUser_returnsCorrupt() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp)
            try store.saveState(counters, user: "alice")
            try #require(chown(tmp + "/users/alice/state", 4242, 4242) == 0)
            guard case .corrupt(let reason) = try store.loadState(user: "alice") else {
                Issue.record("foreign record did not read as corrupt")
                return
            }
            #expect(reason.contains("owned by uid 4242"))
        }
    }

    @Test func loadState_whenRecordCorrupt_copiesAsideOnceAndKeepsTheOriginal() throws {
        try withTemporaryDirectory { tmp in
            let log = NoticeLog()
            let store = try EnrollmentStore(stateDirectory: tmp, onNotice: log.sink)
            try store.saveState(counters, user: "alice")
            let path = tmp + "/users/alice/state"
            let damaged = Array(try readBytes(path).dropLast(3))
            try writeRaw(damaged, to: path)
            for _ in 0..<3 {
                #expect(try store.loadState(user: "alice").isCorrupt, "not corrupt")
            }
            #expect(
                try EnrollmentStore(stateDirectory: tmp).loadState(user: "alice").isCorrupt, "not corrupt after reopen")
            let copies = try names(in: tmp + "/users/alice").filter { $0.hasPrefix("state.corrupt-") }
            #expect(copies.count == 1)
            #expect(try readBytes(tmp + "/users/alice/" + copies[0]) == damaged)
            #expect(try permissions(tmp + "/users/alice/" + copies[0]) == 0o600)
            #expect(try readBytes(path) == damaged)
            #expect(log.all.filter { $0.contains("copied") }.count == 1)
        }
    }

    @Test func loadState_whenRecordMissingButPrintsExist_returnsCorrupt() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp)
            _ = try store.addPrint(samplePrint(), user: "alice")
            try #require(unlink(tmp + "/users/alice/state") == 0)
            #expect(try store.loadState(user: "alice").isCorrupt, "missing record with prints read as absent")
        }
    }

    @Test func saveStateAndAddPrint_whenRecordCorrupt_throwAndLeaveItInPlace() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp)
            try store.saveState(counters, user: "alice")
            try writeRaw(Array("garbage\n".utf8), to: tmp + "/users/alice/state")
            #expect(throws: StoreError.self) { try store.saveState(UserAuthState(), user: "alice") }
            #expect(throws: StoreError.self) { try store.addPrint(samplePrint(), user: "alice") }
            #expect(throws: StoreError.self) { try store.removeAllPrints(user: "alice") }
            #expect(try readBytes(tmp + "/users/alice/state") == Array("garbage\n".utf8))
        }
    }

    // MARK: Reset

    /// A store where alice has one finger and is locked out of biometrics.
    func lockedOutAlice(_ tmp: String) throws -> (EnrollmentStore, UserAuthState) {
        let store = try EnrollmentStore(stateDirectory: tmp)
        let enrolled = try store.addPrint(samplePrint(), user: "alice")
        var locked = counters
        locked.biometryLocked = true
        try store.saveState(locked, user: "alice")
        return (store, enrolled)
    }

    @Test func resetState_whenLockedOut_clearsCountersKeepsHashDomainStateAndPrints() throws {
        try withTemporaryDirectory { tmp in
            let (store, enrolled) = try lockedOutAlice(tmp)
            try store.resetState(user: "alice")
            #expect(
                try store.loadState(user: "alice")
                    == .ok(
                        UserAuthState(
                            lastSeenMs: counters.lastSeenMs, passcodeHash: sampleHash,
                            domainState: enrolled.domainState)))
            #expect(try store.allPrints(user: "alice") == [samplePrint()])
        }
    }

    @Test func resetState_whenRecordCorruptButOurs_keepsWellFormedHashAndRedrawsDomainState() throws {
        try withTemporaryDirectory { tmp in
            let (store, enrolled) = try lockedOutAlice(tmp)
            let path = tmp + "/users/alice/state"
            try writeRaw(Array(try readBytes(path).dropLast(2)), to: path)
            try store.resetState(user: "alice")
            guard case .ok(let fresh) = try store.loadState(user: "alice") else {
                Issue.record("reset did not produce a readable record")
                return
            }
            #expect(fresh.passcodeHash == sampleHash)
            #expect(!fresh.biometryLocked && fresh.fingerFailures == 0 && fresh.passcodeFailures == 0)
            #expect(fresh.passcodeLockedUntilMs == 0)
            #expect(fresh.domainState.count == 32 && fresh.domainState != enrolled.domainState)
            #expect(try store.allPrints(user: "alice") == [samplePrint()])
        }
    }

    @Test func resetState_whenRecordTooPermissive_dropsThePasscodeHash() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp)
            try store.saveState(counters, user: "alice")
            try #require(chmod(tmp + "/users/alice/state", 0o666) == 0)
            try store.resetState(user: "alice")
            #expect(try store.loadState(user: "alice") == .ok(UserAuthState()))
            #expect(try permissions(tmp + "/users/alice/state") == 0o600)
        }
    }

    // MARK: Prints

    @Test func addPrint_thenPrints_returnsEachReadersPrintsInEnrolmentOrder() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp)
            // Reverse alphabetical, so file-name order would be wrong.
            let order: [FingerName] = ["right-thumb", "left-thumb", "left-index-finger"]
            for (index, finger) in order.enumerated() {
                _ = try store.addPrint(samplePrint(finger, seed: UInt8(index)), user: "alice")
            }
            _ = try store.addPrint(samplePrint("left-thumb", device: "elan-1", seed: 9), user: "alice")
            let reopened = try EnrollmentStore(stateDirectory: tmp)
            #expect(try reopened.prints(user: "alice", deviceKey: virtualDevice).map(\.finger) == order)
            #expect(
                try reopened.prints(user: "alice", deviceKey: "elan-1") == [
                    samplePrint("left-thumb", device: "elan-1", seed: 9)
                ])
            #expect(try reopened.prints(user: "alice", deviceKey: "other-0") == [])
            #expect(try reopened.allPrints(user: "alice").count == 4)
            #expect(try reopened.prints(user: "bob", deviceKey: virtualDevice) == [])
        }
    }

    @Test func addPrint_whenFingerAlreadyOnThatDevice_throwsAlreadyExists() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp)
            let first = try store.addPrint(samplePrint(), user: "alice")
            #expect(throws: StoreError.alreadyExists) { try store.addPrint(samplePrint(seed: 5), user: "alice") }
            #expect(try store.loadState(user: "alice") == .ok(first))
            _ = try store.addPrint(samplePrint(device: "elan-1"), user: "alice")
        }
    }

    @Test func addPrint_whenArgumentsInvalid_throwsInvalidArgument() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp)
            let bad = [
                StoredPrint(finger: "left-thumb", deviceKey: "../x", data: [1], enrolledAtMs: 0),
                StoredPrint(finger: "left-thumb", deviceKey: "a@b", data: [1], enrolledAtMs: 0),
                StoredPrint(finger: "left-thumb", deviceKey: virtualDevice, data: [], enrolledAtMs: 0),
            ]
            for print in bad {
                #expect {
                    try store.addPrint(print, user: "alice")
                } throws: { error in
                    guard case .invalidArgument = error as? StoreError else { return false }
                    return true
                }
            }
            #expect(try store.loadState(user: "alice") == .absent)
        }
    }

    @Test func addPrint_whenPrintIsLarge_roundTrips() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp)
            let big = StoredPrint(
                finger: "left-ring-finger", deviceKey: "goodix-5110", data: (0..<100_000).map { UInt8($0 % 251) },
                enrolledAtMs: 5)
            _ = try store.addPrint(big, user: "alice")
            #expect(try EnrollmentStore(stateDirectory: tmp).allPrints(user: "alice") == [big])
        }
    }

    @Test func addAndRemovePrint_drawFreshDomainStateEachTime() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp)
            try store.saveState(counters, user: "alice")
            var seen: [[UInt8]] = [[]]
            seen.append(try store.addPrint(samplePrint(), user: "alice").domainState)
            seen.append(try store.addPrint(samplePrint("left-thumb"), user: "alice").domainState)
            seen.append(
                try store.removePrint(user: "alice", deviceKey: virtualDevice, finger: "right-index-finger").domainState
            )
            seen.append(try store.addPrint(samplePrint(), user: "alice").domainState)
            seen.append(try store.removeAllPrints(user: "alice").domainState)
            #expect(Set(seen).count == seen.count)
            #expect(seen.dropFirst().allSatisfy { $0.count == 32 })
            guard case .ok(let loaded) = try store.loadState(user: "alice") else {
                Issue.record("record not ok")
                return
            }
            #expect(loaded.domainState == seen.last)
            #expect(loaded.passcodeFailures == counters.passcodeFailures)
            #expect(try store.allPrints(user: "alice") == [])
        }
    }

    @Test func removePrint_whenNotEnrolled_throwsNotFoundAndKeepsDomainState() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp)
            let enrolled = try store.addPrint(samplePrint(), user: "alice")
            #expect(throws: StoreError.notFound) {
                try store.removePrint(user: "alice", deviceKey: virtualDevice, finger: "left-thumb")
            }
            #expect(throws: StoreError.notFound) {
                try store.removePrint(user: "alice", deviceKey: "elan-1", finger: "right-index-finger")
            }
            #expect(try store.loadState(user: "alice") == .ok(enrolled))
        }
    }

    @Test func removeAllPrints_whenNoneEnrolled_changesNothing() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp)
            #expect(try store.removeAllPrints(user: "alice") == UserAuthState())
            #expect(try store.loadState(user: "alice") == .absent)
        }
    }

    @Test(arguments: ["truncated", "renamed", "mode0644"])
    func prints_whenPrintFileCorrupt_setsItAsideAndRedrawsDomainState(damage: String) throws {
        try withTemporaryDirectory { tmp in
            let log = NoticeLog()
            let store = try EnrollmentStore(stateDirectory: tmp, onNotice: log.sink)
            _ = try store.addPrint(samplePrint("left-thumb"), user: "alice")
            let before = try store.addPrint(samplePrint(), user: "alice")
            let directory = tmp + "/users/alice/"
            let name = "right-index-finger@virtual_device-0.print"
            switch damage {
            case "truncated": try writeRaw(Array(try readBytes(directory + name).dropLast(20)), to: directory + name)
            case "renamed":
                try #require(rename(directory + name, directory + "left-index-finger@virtual_device-0.print") == 0)
            default: try #require(chmod(directory + name, 0o644) == 0)
            }
            #expect(try store.prints(user: "alice", deviceKey: virtualDevice) == [samplePrint("left-thumb")])
            guard case .ok(let after) = try store.loadState(user: "alice") else {
                Issue.record("record not ok")
                return
            }
            #expect(after.domainState != before.domainState)
            #expect(after.domainState.count == 32)
            let files = try names(in: directory)
            #expect(files.filter { $0.contains(".print.corrupt-") }.count == 1)
            #expect(files.filter { $0.hasSuffix(".print") } == ["left-thumb@virtual_device-0.print"])
            let notice = try #require(log.all.first { $0.contains("set aside corrupt print file") })
            #expect(!notice.contains(Hex.encode(samplePrint().data.prefix(4))))
            // Set aside once: the next read changes nothing.
            #expect(try store.allPrints(user: "alice").count == 1)
            #expect(try store.loadState(user: "alice") == .ok(after))
        }
    }

    @Test func users_listsUsersWithRecordsOrPrints() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp)
            try store.saveState(counters, user: "zed")
            _ = try store.addPrint(samplePrint(), user: "alice")
            try #require(mkdir(tmp + "/users/.hidden", 0o700) == 0)
            #expect(try store.users() == ["alice", "zed"])
        }
    }
}

extension String {
    /// Foundation-free `replacingOccurrences(of:with:)` for one known substring.
    func replacingOccurrences(_ target: String, with replacement: String) -> String {
        var copy = self
        guard let range = copy.firstRange(of: target) else { return self }
        copy.replaceSubrange(range, with: replacement)
        return copy
    }
}

@Test func isValidUserName_agreesWithTheStoresChecks() {
    #expect(EnrollmentStore.isValidUserName("alice"))
    #expect(EnrollmentStore.isValidUserName(String(repeating: "a", count: 64)))
    #expect(!EnrollmentStore.isValidUserName("../x"))
    #expect(!EnrollmentStore.isValidUserName(String(repeating: "a", count: 65)))
    #expect(EnrollmentStore.isValidDeviceKey("virtual_device-0"))
    #expect(!EnrollmentStore.isValidDeviceKey("a@b"))
}
