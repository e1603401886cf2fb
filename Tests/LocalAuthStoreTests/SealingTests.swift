// SPDX-License-Identifier: Apache-2.0
import Glibc
import LocalAuthCore
import LocalAuthCrypto
import Testing

@testable import LocalAuthStore

/// Sealing to the machine (ADR 0006) with the key-file method: what is on disk opens only with this
/// machine's key, a state directory moved without it fails closed, and plain stores are sealed once,
/// crash-safely. The TPM2 method is in `TPM2SealingTests`.
@Suite struct SealingTests {
    /// A state directory and a key file beside it, inside one temporary directory.
    static func paths(_ tmp: String) -> (state: String, sealing: SealingConfiguration) {
        (tmp + "/state", SealingConfiguration(method: .keyFile, keyFile: tmp + "/machine.key"))
    }

    static func containsRun(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains {
            haystack[$0..<($0 + needle.count)].elementsEqual(needle)
        }
    }

    @Test func addPrint_whenSealing_writesNoPrintBytesToDisk() throws {
        try withTemporaryDirectory { tmp in
            let (state, sealing) = Self.paths(tmp)
            let store = try EnrollmentStore(stateDirectory: state, sealing: sealing)
            #expect(store.sealingMethod == .keyFile)
            let print = samplePrint()
            _ = try store.addPrint(print, user: "alice")
            let onDisk = try readBytes(state + "/users/alice/right-index-finger@virtual_device-0.print")
            #expect(Sealer.isSealed(onDisk))
            #expect(!Self.containsRun(onDisk, Array(print.data[0..<16])))
            #expect(try EnrollmentStore(stateDirectory: state, sealing: sealing).allPrints(user: "alice") == [print])
            #expect(try permissions(tmp + "/machine.key") == 0o600)
        }
    }

    @Test func open_whenStateDirectoryMovedWithoutItsKey_failsClosedAndChangesNothing() throws {
        try withTemporaryDirectory { tmp in
            let (state, sealing) = Self.paths(tmp)
            _ = try EnrollmentStore(stateDirectory: state, sealing: sealing).addPrint(samplePrint(), user: "alice")
            let before = try names(in: state + "/users/alice")
            // "Another machine": the same directory, a key file that is not there.
            let elsewhere = SealingConfiguration(method: .keyFile, keyFile: tmp + "/other-machine.key")
            expectOpenRefused(state, sealing: elsewhere, saying: "moved from another machine")
            #expect(try names(in: state + "/users/alice") == before)
        }
    }

    @Test func open_withAnotherMachinesKeyFile_failsClosed() throws {
        try withTemporaryDirectory { tmp in
            let (state, sealing) = Self.paths(tmp)
            _ = try EnrollmentStore(stateDirectory: state, sealing: sealing).addPrint(samplePrint(), user: "alice")
            // Another machine's key, made the same way, at the path this one expects.
            let other = tmp + "/other"
            _ = try EnrollmentStore(
                stateDirectory: other + "-state",
                sealing: SealingConfiguration(method: .keyFile, keyFile: tmp + "/machine2.key"))
            #expect(rename(tmp + "/machine2.key", tmp + "/machine.key") == 0)
            #expect(throws: StoreError.self) { try EnrollmentStore(stateDirectory: state, sealing: sealing) }
        }
    }

    @Test func open_whenSealedFilesButNoSealingRecord_failsClosed() throws {
        try withTemporaryDirectory { tmp in
            let (state, sealing) = Self.paths(tmp)
            _ = try EnrollmentStore(stateDirectory: state, sealing: sealing).addPrint(samplePrint(), user: "alice")
            #expect(unlink(state + "/sealing") == 0)
            #expect(unlink(tmp + "/machine.key") == 0)
            #expect(throws: StoreError.self) { try EnrollmentStore(stateDirectory: state, sealing: sealing) }
            #expect(try names(in: state).contains("sealing") == false, "no new key was made over sealed files")
        }
    }

    @Test func sealedPrint_copiedIntoAnotherUsersDirectory_isSetAsideNotUsed() throws {
        try withTemporaryDirectory { tmp in
            let (state, sealing) = Self.paths(tmp)
            let store = try EnrollmentStore(stateDirectory: state, sealing: sealing)
            _ = try store.addPrint(samplePrint(), user: "alice")
            _ = try store.addPrint(samplePrint("left-thumb", seed: 2), user: "mallory")
            let name = "right-index-finger@virtual_device-0.print"
            try writeRaw(try readBytes(state + "/users/alice/" + name), to: state + "/users/mallory/" + name)
            #expect(try store.allPrints(user: "mallory").map(\.finger) == ["left-thumb"])
        }
    }

    @Test func plainStore_isSealedOnce_andAPlainPrintAddedLaterIsRefused() throws {
        try withTemporaryDirectory { tmp in
            let (state, sealing) = Self.paths(tmp)
            let print = samplePrint()
            _ = try EnrollmentStore(stateDirectory: state).addPrint(print, user: "alice")  // an older version
            let log = NoticeLog()
            let sealed = try EnrollmentStore(stateDirectory: state, sealing: sealing, onNotice: log.sink)
            #expect(log.all.contains { $0.contains("sealed 1 print file") })
            #expect(Sealer.isSealed(try readBytes(state + "/users/alice/right-index-finger@virtual_device-0.print")))
            #expect(try sealed.allPrints(user: "alice") == [print])
            // After the migration, a plain print (planted, or restored from an old backup) is not used.
            let plain = try EnrollmentStore(stateDirectory: tmp + "/plain-elsewhere")
            _ = try plain.addPrint(samplePrint("left-thumb", seed: 3), user: "alice")
            try writeRaw(
                try readBytes(tmp + "/plain-elsewhere/users/alice/left-thumb@virtual_device-0.print"),
                to: state + "/users/alice/left-thumb@virtual_device-0.print")
            #expect(try EnrollmentStore(stateDirectory: state, sealing: sealing).allPrints(user: "alice") == [print])
        }
    }

    /// Issue 26: the sealing record was checked by CRC only. Offline, a plain print is planted beside
    /// the sealed one and the record rewritten to `migrated=0` with a right CRC (and no HMAC: the
    /// writer has no key). The next start must neither seal the planted print nor use it.
    @Test func open_whenTheSealingRecordIsFlippedOfflineToUnmigrated_sealsNoPlantedPrint() throws {
        try withTemporaryDirectory { tmp in
            let (state, sealing) = Self.paths(tmp)
            let print = samplePrint()
            _ = try EnrollmentStore(stateDirectory: state, sealing: sealing).addPrint(print, user: "alice")
            let plain = try EnrollmentStore(stateDirectory: tmp + "/plain-elsewhere")
            _ = try plain.addPrint(samplePrint("left-thumb", seed: 3), user: "alice")
            let planted = state + "/users/alice/left-thumb@virtual_device-0.print"
            try writeRaw(
                try readBytes(tmp + "/plain-elsewhere/users/alice/left-thumb@virtual_device-0.print"), to: planted)
            var record = try #require(SealingRecord.decode(try readBytes(state + "/sealing")))
            record.migrated = false
            record.mac = nil
            try writeRaw(record.encode(), to: state + "/sealing")

            let log = NoticeLog()
            let reopened = try EnrollmentStore(stateDirectory: state, sealing: sealing, onNotice: log.sink)
            #expect(try reopened.allPrints(user: "alice") == [print])
            // The planted file is left plain (or set aside as corrupt), never sealed.
            for name in try names(in: state + "/users/alice") where name.hasPrefix("left-thumb") {
                #expect(!Sealer.isSealed(try readBytes(state + "/users/alice/" + name)), "\(name) was sealed")
            }
            #expect(log.all.contains { $0.contains("not authenticated") }, "\(log.all)")
            // The record is the key's own again, and a later start still does not use the planted print.
            #expect(SealingRecord.decode(try readBytes(state + "/sealing"))?.mac != nil)
            #expect(try EnrollmentStore(stateDirectory: state, sealing: sealing).allPrints(user: "alice") == [print])
        }
    }

    /// The same flip keeping the record's HMAC: the record no longer holds, and the start fails
    /// closed, changing nothing.
    @Test func open_whenTheSealingRecordIsChangedKeepingItsHMAC_failsClosed() throws {
        try withTemporaryDirectory { tmp in
            let (state, sealing) = Self.paths(tmp)
            _ = try EnrollmentStore(stateDirectory: state, sealing: sealing).addPrint(samplePrint(), user: "alice")
            var record = try #require(SealingRecord.decode(try readBytes(state + "/sealing")))
            #expect(record.mac != nil && record.migrated)
            record.migrated = false
            try writeRaw(record.encode(), to: state + "/sealing")
            let before = try readBytes(state + "/sealing")
            expectOpenRefused(state, sealing: sealing, saying: "was changed")
            #expect(try readBytes(state + "/sealing") == before)
        }
    }

    /// A crash at every write step of the migration (temporary file written, synced, renamed,
    /// directory synced — for each print, and for the sealing record): the next start finishes the
    /// job and every print is there, sealed.
    @Test func migration_whenCrashAtAnyWriteStep_losesNoPrintAndFinishesNextStart() throws {
        var step = 1
        var finished = false
        while !finished {
            try withTemporaryDirectory { tmp in
                let (state, sealing) = Self.paths(tmp)
                let plain = try EnrollmentStore(stateDirectory: state)
                let prints = [samplePrint(), samplePrint("left-thumb", seed: 2)]
                for p in prints { _ = try plain.addPrint(p, user: "alice") }
                _ = try plain.addPrint(samplePrint(seed: 3), user: "bob")
                let crash = CrashAfter(steps: step)
                do {
                    _ = try EnrollmentStore(
                        stateDirectory: state, sealing: sealing, onNotice: nil, writeHook: crash.hook)
                    finished = true  // no step left to crash at
                } catch {
                    #expect(error as? StoreError == CrashAfter.crash, "step \(step)")
                }
                let restarted = try EnrollmentStore(stateDirectory: state, sealing: sealing)
                #expect(try restarted.allPrints(user: "alice") == prints, "crash at step \(step)")
                #expect(try restarted.allPrints(user: "bob").count == 1, "crash at step \(step)")
                for name in try names(in: state + "/users/alice") where name.hasSuffix(".print") {
                    #expect(Sealer.isSealed(try readBytes(state + "/users/alice/" + name)), "step \(step): \(name)")
                }
            }
            step += 1
            #expect(step < 60, "the migration should take a bounded number of steps")
            if step >= 60 { break }
        }
        #expect(step > 10, "the crash points covered the whole migration (\(step - 1) steps)")
    }
}

/// The rights kept in the store.
@Suite struct RightStoreTests {
    /// A sealed store where alice has one finger and a right "bound" to that set of fingers.
    static func storeWithBoundRight(state: String, sealing: SealingConfiguration) throws -> EnrollmentStore {
        let store = try EnrollmentStore(stateDirectory: state, sealing: sealing)
        let enrolled = try store.addPrint(samplePrint(), user: "alice")
        try store.saveRight(right("bound", .biometryCurrentSet, domainState: enrolled.domainState), user: "alice")
        return store
    }

    static func right(
        _ id: String = "com.example.vault", _ requirement: StoredRight.Requirement = .biometryAny,
        domainState: [UInt8] = []
    )
        -> StoredRight
    {
        StoredRight(
            identifier: id, requirement: requirement, domainState: domainState, secret: Array("hunter2".utf8),
            privateKey: RightKeys.generatePrivateKey(), createdAtMs: 1)
    }

    @Test func saveRight_thenLoad_givesItBack_andTheFileHoldsNeitherSecretNorKey() throws {
        try withTemporaryDirectory { tmp in
            let (state, sealing) = SealingTests.paths(tmp)
            let store = try EnrollmentStore(stateDirectory: state, sealing: sealing)
            let right = Self.right()
            try store.saveRight(right, user: "alice")
            #expect(try store.loadRight(identifier: right.identifier, user: "alice") == .ok(right))
            let file = try names(in: state + "/users/alice").first { $0.hasSuffix(".right") }!
            let bytes = try readBytes(state + "/users/alice/" + file)
            #expect(!SealingTests.containsRun(bytes, Array("hunter2".utf8)))
            #expect(!SealingTests.containsRun(bytes, Array("com.example".utf8)))
            #expect(!SealingTests.containsRun(bytes, Array(right.privateKey[0..<8])))
        }
    }

    @Test func saveRight_whenTheIdentifierExists_isRefusedAndKeepsTheFirst() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp + "/state")
            let first = Self.right()
            try store.saveRight(first, user: "alice")
            #expect(throws: StoreError.alreadyExists) { try store.saveRight(Self.right(), user: "alice") }
            #expect(try store.loadRight(identifier: first.identifier, user: "alice") == .ok(first))
        }
    }

    @Test func currentSetRight_whenAFingerIsAddedOrRemoved_isDestroyed_otherRightsStay() throws {
        try withTemporaryDirectory { tmp in
            let (state, sealing) = SealingTests.paths(tmp)
            let store = try Self.storeWithBoundRight(state: state, sealing: sealing)
            try store.saveRight(Self.right("any", .biometryAny), user: "alice")
            #expect(try store.rightCount(user: "alice") == 2)
            _ = try store.addPrint(samplePrint("left-thumb", seed: 2), user: "alice")
            #expect(try store.loadRight(identifier: "bound", user: "alice") == .absent)
            #expect(try store.rightCount(user: "alice") == 1)
            if case .ok = try store.loadRight(identifier: "any", user: "alice") {} else { Issue.record("any was lost") }

            let now = try store.loadState(user: "alice")
            guard case .ok(let s) = now else { Issue.record("state"); return }
            try store.saveRight(Self.right("bound2", .biometryCurrentSet, domainState: s.domainState), user: "alice")
            _ = try store.removePrint(user: "alice", deviceKey: virtualDevice, finger: "left-thumb")
            #expect(try store.loadRight(identifier: "bound2", user: "alice") == .absent)
        }
    }

    @Test func currentSetRight_boundToAStaleSet_isDestroyedWhenRead() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp + "/state")
            _ = try store.addPrint(samplePrint(), user: "alice")
            // As after a crash between the enrolment and the destruction: bound to a set that is gone.
            try store.saveRight(Self.right("bound", .biometryCurrentSet, domainState: [1, 2, 3]), user: "alice")
            #expect(try store.loadRight(identifier: "bound", user: "alice") == .absent)
            #expect(try store.rightCount(user: "alice") == 0)
        }
    }

    @Test func removeRight_andRemoveAll_deleteTheFiles() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp + "/state")
            try store.saveRight(Self.right("a"), user: "alice")
            try store.saveRight(Self.right("b"), user: "alice")
            try store.removeRight(identifier: "a", user: "alice")
            #expect(throws: StoreError.notFound) { try store.removeRight(identifier: "a", user: "alice") }
            #expect(try store.removeAllRights(user: "alice") == 1)
            #expect(try store.rightCount(user: "alice") == 0)
        }
    }

    /// Kill points in a right's save: after a crash at any write step and a restart, the right is
    /// there whole or not at all, never damaged.
    @Test(arguments: 1...4)
    func saveRight_whenCrashAtAnyWriteStep_isWholeOrAbsent(step: Int) throws {
        try withTemporaryDirectory { tmp in
            let (state, sealing) = SealingTests.paths(tmp)
            _ = try EnrollmentStore(stateDirectory: state, sealing: sealing)
            let crash = CrashAfter(steps: step)
            let crashing = try EnrollmentStore(
                stateDirectory: state, sealing: sealing, onNotice: nil, writeHook: crash.hook)
            let right = Self.right()
            #expect(throws: CrashAfter.crash) { try crashing.saveRight(right, user: "alice") }
            let load = try EnrollmentStore(stateDirectory: state, sealing: sealing).loadRight(
                identifier: right.identifier, user: "alice")
            #expect(load == .absent || load == .ok(right), "crash after step \(step): \(load)")
        }
    }

    /// Kill points in an enrolment: whatever step a crash interrupts, a `biometryCurrentSet` right is
    /// never usable once the set of prints differs from the one it was bound to.
    @Test(arguments: 1...12)
    func addPrint_whenCrashAtAnyWriteStep_neverLeavesACurrentSetRightUsableWithAnotherSet(step: Int) throws {
        try withTemporaryDirectory { tmp in
            let (state, sealing) = SealingTests.paths(tmp)
            _ = try Self.storeWithBoundRight(state: state, sealing: sealing)
            let crash = CrashAfter(steps: step)
            let crashing = try EnrollmentStore(
                stateDirectory: state, sealing: sealing, onNotice: nil, writeHook: crash.hook)
            do { _ = try crashing.addPrint(samplePrint("left-thumb", seed: 2), user: "alice") } catch {}
            let restarted = try EnrollmentStore(stateDirectory: state, sealing: sealing)
            let prints = try restarted.allPrints(user: "alice").map(\.finger)
            let load = try restarted.loadRight(identifier: "bound", user: "alice")
            if prints.count == 2 {
                #expect(load == .absent, "crash after step \(step): the set changed and the right survived")
            }
            if case .ok = load {
                #expect(prints == ["right-index-finger"], "crash after step \(step)")
            }
        }
    }

    /// A right's file that another user could have written (or read: it holds the secret) is
    /// refused, not served: in a store without sealing the owner and mode are the only guard.
    /// (Giving the file away needs root.)
    @Test(arguments: ["mode0644", "mode0666"] + (isRoot ? ["foreign"] : []))
    func rightFile_whenOpenToOthersOrNotOurs_loadsCorruptNotTheRight(damage: String) throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp + "/state")
            let right = Self.right()
            try store.saveRight(right, user: "alice")
            let path = tmp + "/state/users/alice/" + RightRecord.fileName(identifier: right.identifier)
            switch damage {
            case "mode0644": try #require(chmod(path, 0o644) == 0)
            case "mode0666": try #require(chmod(path, 0o666) == 0)
            default: try #require(chown(path, 4242, 4242) == 0)
            }
            guard case .corrupt(let reason) = try store.loadRight(identifier: right.identifier, user: "alice") else {
                Issue.record("a right file open to others (\(damage)) was served")
                return
            }
            #expect(reason.contains(damage == "foreign" ? "owned by uid 4242" : "too permissive"))
        }
    }

    @Test func rightFile_renamedToAnotherIdentifier_isCorruptNotAnotherRight() throws {
        try withTemporaryDirectory { tmp in
            let (state, sealing) = SealingTests.paths(tmp)
            let store = try EnrollmentStore(stateDirectory: state, sealing: sealing)
            try store.saveRight(Self.right("a"), user: "alice")
            let dir = state + "/users/alice/"
            let a = try names(in: dir).first { $0.hasSuffix(".right") }!
            let b = RightRecord.fileName(identifier: "b")
            #expect(rename(dir + a, dir + b) == 0)
            #expect(try store.loadRight(identifier: "b", user: "alice").isCorrupt, "a renamed right file was accepted")
        }
    }
}
