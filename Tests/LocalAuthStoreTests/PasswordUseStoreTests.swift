// SPDX-License-Identifier: Apache-2.0
import Glibc
import LocalAuthCore
import Testing

@testable import LocalAuthStore

/// The record of password and finger use (`users/<user>/password`) and the machine's marker
/// (`password-reported`): strict decoding, damage that reads as "password required", and crashes
/// at every write step that leave the old record or the new one.
@Suite struct PasswordUseStoreTests {
    static let boot = "23383262a4eb445ba9b0ce29b283aabc"
    let old = PasswordUse(password: BootInstant(bootID: boot, bootMs: 1000, wallMs: 1_700_000_000_000))
    let new = PasswordUse(
        password: BootInstant(bootID: boot, bootMs: 90_000, wallMs: 1_700_000_089_000),
        finger: BootInstant(bootID: boot, bootMs: 95_000, wallMs: 1_700_000_094_000))

    @Test func passwordUse_whenSavedAndReopened_readsBackExactly() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp)
            #expect(try store.loadPasswordUse(user: "alice") == .absent)
            try store.savePasswordUse(new, user: "alice")
            #expect(try EnrollmentStore(stateDirectory: tmp).loadPasswordUse(user: "alice") == .ok(new))
            #expect(try permissions(tmp + "/users/alice/password") == 0o600)
            let text = String(decoding: try readBytes(tmp + "/users/alice/password"), as: UTF8.self)
            #expect(text.hasPrefix("localauthd-password-use 1\npassword=\(Self.boot) 90000 1700000089000\nfinger="))
            // The lockout record is a separate file, untouched.
            #expect(try store.loadState(user: "alice") == .absent)
        }
    }

    @Test(arguments: [
        "localauthd-password-use 2\npassword=\nfinger=\n",
        "localauthd-password-use 1\npassword=abc 1 2\nfinger=\n",
        "localauthd-password-use 1\npassword=\(boot) 01 2\nfinger=\n",
        "localauthd-password-use 1\npassword=\(boot) 1\nfinger=\n",
        "localauthd-password-use 1\nfinger=\npassword=\n",
        "localauthd-password-use 1\npassword=\nfinger=\nextra=1\n",
        "localauthd-password-use 1\npassword=\(boot.uppercased()) 1 2\nfinger=\n",
    ])
    func passwordUse_whenFieldsAreNotCanonical_loadsCorrupt(body: String) throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp)
            try store.savePasswordUse(old, user: "alice")
            try writeRaw(Seal.seal(Array(body.utf8)), to: tmp + "/users/alice/password")
            #expect(try store.loadPasswordUse(user: "alice").isCorrupt, "accepted \(body)")
        }
    }

    @Test func passwordUse_whenDamagedOrForeign_loadsCorruptAndAFreshUseReplacesIt() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp)
            try store.savePasswordUse(new, user: "alice")
            let path = tmp + "/users/alice/password"
            var bytes = try readBytes(path)
            bytes[30] ^= 0x01
            try writeRaw(bytes, to: path)
            #expect(try store.loadPasswordUse(user: "alice") == .corrupt("\(path): checksum mismatch"))
            try writeRaw(Array(try readBytes(path).prefix(20)), to: path)
            guard case .corrupt = try store.loadPasswordUse(user: "alice") else { throw StoreError.notFound }
            try store.savePasswordUse(old, user: "alice")
            try #require(chmod(path, 0o644) == 0)
            guard case .corrupt(let why) = try store.loadPasswordUse(user: "alice") else { throw StoreError.notFound }
            #expect(why.contains("too permissive"))
            try store.savePasswordUse(old, user: "alice")
            #expect(try store.loadPasswordUse(user: "alice") == .ok(old))
        }
    }

    @Test(arguments: crashPoints)
    func passwordUse_whenCrashAfterStep_holdsExactlyOldOrNewRecord(step: WriteStep, expectNew: Bool) throws {
        try withTemporaryDirectory { tmp in
            try EnrollmentStore(stateDirectory: tmp).savePasswordUse(old, user: "alice")
            let restarted = try restartAfterCrash(in: tmp, after: step) { try $0.savePasswordUse(new, user: "alice") }
            #expect(try restarted.loadPasswordUse(user: "alice") == .ok(expectNew ? new : old))
            #expect(try names(in: tmp + "/users/alice") == ["password"])
        }
    }

    @Test func passwordReported_isAbsentUntilMarkedThenKeptAcrossRestarts() throws {
        try withTemporaryDirectory { tmp in
            let store = try EnrollmentStore(stateDirectory: tmp)
            #expect(try store.passwordReported() == false)
            #expect(try store.markPasswordReported(atMs: 5) == true)
            #expect(try store.markPasswordReported(atMs: 6) == false)
            #expect(try EnrollmentStore(stateDirectory: tmp).passwordReported() == true)
            #expect(try permissions(tmp + "/password-reported") == 0o600)
            // Damaged, it still counts: the rules stay on.
            try writeRaw([0xFF], to: tmp + "/password-reported")
            #expect(try EnrollmentStore(stateDirectory: tmp).passwordReported() == true)
        }
    }

    @Test func passwordReported_whenCrashBeforeRename_isStillAbsentAndTheTempFileIsRemoved() throws {
        try withTemporaryDirectory { tmp in
            let crashing = try EnrollmentStore(stateDirectory: tmp, onNotice: nil, writeHook: CrashAfter(steps: 2).hook)
            #expect(throws: CrashAfter.crash) { try crashing.markPasswordReported(atMs: 5) }
            let restarted = try EnrollmentStore(stateDirectory: tmp)
            #expect(try restarted.passwordReported() == false)
            #expect(try names(in: tmp) == ["users"])
        }
    }
}
