// SPDX-License-Identifier: Apache-2.0
import Glibc
import LocalAuthCrypto
import Synchronization
import Testing

@testable import LocalAuthStore

/// A right belongs to the program that saved it (ADR 0012), in the store: another program's right of
/// an identifier is absent; rights saved before ownership (record version 1) are adopted once, and a
/// crash in the adoption never leaves a copy for a second program.
@Suite struct RightOwnershipStoreTests {
    static let app = RightStoreTests.app
    static let other = "exe:/home/alice/.local/bin/not-the-vault"

    /// A right as version 1 wrote it (no owner; `<sha256(identifier)>.right`), sealed for its place.
    static func writeVersion1(_ right: StoredRight, store: EnrollmentStore, state: String, user: String) throws {
        let body = RightRecord.body(right, header: RightRecord.headerVersion1 + "\n")
        let name = RightRecord.fileName(owner: nil, identifier: right.identifier)
        mkdir(state + "/users", 0o700)
        mkdir(state + "/users/" + user, 0o700)
        try store.atomicWrite(
            store.sealedIfSealing(Seal.seal(body), user: user, name: name), directory: state + "/users/" + user,
            name: name)
    }

    @Test func right_ofAnotherProgram_isAbsent_andItsSaveOfTheIdentifierIsARightOfItsOwn() throws {
        try withTemporaryDirectory { tmp in
            let (state, sealing) = SealingTests.paths(tmp)
            let store = try EnrollmentStore(stateDirectory: state, sealing: sealing)
            let mine = RightStoreTests.right()
            try store.saveRight(mine, user: "alice")
            #expect(try store.loadRight(identifier: mine.identifier, owner: Self.other, user: "alice") == .absent)
            #expect(throws: StoreError.notFound) {
                try store.removeRight(identifier: mine.identifier, owner: Self.other, user: "alice")
            }
            #expect(try store.removeAllRights(user: "alice", owner: Self.other) == 0)

            let theirs = RightStoreTests.right(owner: Self.other)
            try store.saveRight(theirs, user: "alice")
            #expect(try store.loadRight(identifier: mine.identifier, owner: Self.app, user: "alice") == .ok(mine))
            #expect(try store.loadRight(identifier: mine.identifier, owner: Self.other, user: "alice") == .ok(theirs))
            // An administrator's removal takes every program's right of the identifier.
            try store.removeRight(identifier: mine.identifier, owner: nil, user: "alice")
            #expect(try store.rightCount(user: "alice") == 0)
        }
    }

    @Test func right_withoutAnOwner_isRefusedBySave() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp + "/state")
            let unowned = StoredRight(
                identifier: "x", owner: nil, requirement: .biometryAny, domainState: [], secret: [],
                privateKey: RightKeys.generatePrivateKey(), createdAtMs: 1)
            #expect(throws: StoreError.self) { try store.saveRight(unowned, user: "alice") }
        }
    }

    /// ADR 0012's migration: a right saved before rights had owners is seen by any program of the
    /// account (as every right was then) and blocks a save of its identifier, until the first program
    /// that uses it with the person's consent adopts it; from then on it is that program's alone.
    @Test func rightOfVersion1_isSeenByAnyProgram_untilOneAdoptsIt_thenIsThatProgramsAlone() throws {
        try withTemporaryDirectory { tmp in
            let (state, sealing) = SealingTests.paths(tmp)
            let notices = Mutex<[String]>([])
            let store = try EnrollmentStore(
                stateDirectory: state, sealing: sealing, onNotice: { m in notices.withLock { $0.append(m) } })
            let old = RightStoreTests.right()
            let unowned = StoredRight(
                identifier: old.identifier, owner: nil, requirement: old.requirement, domainState: [],
                secret: old.secret,
                privateKey: old.privateKey, createdAtMs: old.createdAtMs)
            try Self.writeVersion1(old, store: store, state: state, user: "alice")

            #expect(try store.loadRight(identifier: old.identifier, owner: Self.app, user: "alice") == .ok(unowned))
            #expect(try store.loadRight(identifier: old.identifier, owner: Self.other, user: "alice") == .ok(unowned))
            #expect(throws: StoreError.alreadyExists) {
                try store.saveRight(RightStoreTests.right(owner: Self.other), user: "alice")
            }

            let adopted = try store.adoptRight(identifier: old.identifier, owner: Self.app, user: "alice")
            #expect(adopted == old, "the same key and secret, now the app's")
            #expect(try store.loadRight(identifier: old.identifier, owner: Self.app, user: "alice") == .ok(old))
            #expect(try store.loadRight(identifier: old.identifier, owner: Self.other, user: "alice") == .absent)
            #expect(try store.rightCount(user: "alice") == 1)
            #expect(
                notices.withLock { $0 }.contains {
                    $0.contains("now belongs to") && $0.contains("exe:/usr/bin/vault-app")
                },
                "\(notices.withLock { $0 })")
            #expect(throws: StoreError.notFound) {
                try store.adoptRight(identifier: old.identifier, owner: Self.other, user: "alice")
            }
        }
    }

    /// Kill points in an adoption: whatever step a crash interrupts, afterwards exactly one program
    /// can have the right — never the adopter and another program each with a copy of its key.
    @Test(arguments: 1...6)
    func adoptRight_whenCrashAtAnyWriteStep_neverLeavesACopyForAnotherProgram(step: Int) throws {
        try withTemporaryDirectory { tmp in
            let (state, sealing) = SealingTests.paths(tmp)
            let setup = try EnrollmentStore(stateDirectory: state, sealing: sealing)
            let old = RightStoreTests.right()
            try Self.writeVersion1(old, store: setup, state: state, user: "alice")
            let crash = CrashAfter(steps: step)
            let crashing = try EnrollmentStore(
                stateDirectory: state, sealing: sealing, onNotice: nil, writeHook: crash.hook)
            do { _ = try crashing.adoptRight(identifier: old.identifier, owner: Self.app, user: "alice") } catch {}

            let restarted = try EnrollmentStore(stateDirectory: state, sealing: sealing)
            let mine = try restarted.loadRight(identifier: old.identifier, owner: Self.app, user: "alice")
            let theirs = try restarted.loadRight(identifier: old.identifier, owner: Self.other, user: "alice")
            guard case .ok(let a) = mine else {
                Issue.record("crash after step \(step): the right was lost: \(mine)")
                return
            }
            #expect(a.privateKey == old.privateKey)
            if a.owner == Self.app {
                #expect(theirs == .absent, "crash after step \(step): another program still sees the adopted right")
            } else {
                #expect(a.owner == nil && theirs == mine, "crash after step \(step): not adopted, still unowned")
            }
        }
    }

    /// A record whose owner cannot be read is refused, never served to a program (fail closed), and
    /// says why.
    @Test func rightRecord_withAnUnreadableOwner_loadsCorrupt() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp + "/state")
            let right = RightStoreTests.right()
            try store.saveRight(right, user: "alice")
            let name = RightRecord.fileName(owner: Self.app, identifier: right.identifier)
            let body = Array(
                """
                localauthd-right 2
                owner=not hex
                identifier=\(Hex.encode(Array(right.identifier.utf8)))
                requirement=biometry-any
                domainState=
                createdAtMs=1
                privateKey=\(Hex.encode(right.privateKey))
                secretLength=0


                """.utf8)
            try store.atomicWrite(Seal.seal(body), directory: tmp + "/state/users/alice", name: name)
            guard
                case .corrupt(let why) = try store.loadRight(
                    identifier: right.identifier, owner: Self.app, user: "alice")
            else {
                Issue.record("a right with an unreadable owner was served")
                return
            }
            #expect(why.contains("its owner"), "\(why)")
        }
    }
}
