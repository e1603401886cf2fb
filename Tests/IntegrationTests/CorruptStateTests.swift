// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthProtocol
import LocalAuthTesting
import Testing

/// Promise 3 of docs/reliability.md: a state file that is truncated, garbage, owned by someone
/// else or readable by others makes the real daemon log it and refuse biometrics for that user
/// only (never "no lockout"), while everyone else is served; the file is left as it was.
@Suite(.onOwnThreads, .timeLimit(.minutes(3)))
struct CorruptStateTests {
    enum Damage: String, CaseIterable, CustomTestStringConvertible {
        case truncated, garbage, wrongOwner, tooPermissive
        var testDescription: String { rawValue }

        func apply(to path: String) throws {
            switch self {
            case .truncated:
                let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
                try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: path))
            case .garbage:
                var generator = SystemRandomNumberGenerator()
                let bytes = Data((0..<300).map { _ in UInt8.random(in: 0...255, using: &generator) })
                try bytes.write(to: URL(fileURLWithPath: path))
            case .wrongOwner:
                #expect(chown(path, 65534, 65534) == 0)
            case .tooPermissive:
                #expect(chmod(path, 0o644) == 0)
            }
        }
    }

    static func biometrics(_ user: String) -> EvaluateOptions {
        EvaluateOptions(
            policy: .deviceOwnerAuthenticationWithBiometrics, user: user, service: "test", tries: 1, timeoutMs: 10_000)
    }

    /// The file's bytes, owner and mode.
    static func fingerprint(_ path: String) throws -> (Data, UInt32, UInt32) {
        var st = stat()
        #expect(stat(path, &st) == 0)
        return (try Data(contentsOf: URL(fileURLWithPath: path)), st.st_uid, st.st_mode & 0o7777)
    }

    @Test(arguments: Damage.allCases)
    func corruptState_ofOneUser_refusesHerBiometricsLogsItAndServesOthers(_ damage: Damage) async throws {
        let d = try await DaemonHarness.withAlicesFinger()
        try await d.enroll(user: "bob", printID: "bob-1")
        let (set, _) = try d.perform(.passcodeSet(user: "alice", passcode: "alice passcode", oldPasscode: nil))
        #expect(set.isSuccess)
        // Alice has locked herself out: a damaged file must not read as "no lockout".
        for _ in 1...5 {
            try d.simulate("touch", "mallory")
            _ = try d.perform(.evaluate(Self.biometrics("alice")))
        }
        #expect(try d.perform(.status(user: "alice")).0.fields.bool(.biometryLocked) == true)
        d.stop()

        let path = d.stateDirectory + "/users/alice/state"
        try damage.apply(to: path)
        let damaged = try Self.fingerprint(path)
        try d.start()

        // Alice: biometrics refused at once, without asking for a finger.
        let (status, _) = try d.perform(.status(user: "alice"))
        #expect(status.fields.bool(.biometryLocked) == true, "\(status.message)")
        let (can, _) = try d.perform(.canEvaluate(policy: .deviceOwnerAuthenticationWithBiometrics, user: "alice"))
        #expect(!can.isSuccess)
        let (evaluation, events) = try d.perform(.evaluate(Self.biometrics("alice")))
        #expect(
            evaluation.resultCode == .biometryLockout || evaluation.resultCode == .biometryNotAvailable,
            "\(evaluation.message)")
        #expect(!events.contains { $0.kind == .placeFinger }, "no finger may be asked for")
        // Nor can her passcode be changed on top of an unreadable record.
        let (change, _) = try d.perform(.passcodeSet(user: "alice", passcode: "new passcode", oldPasscode: nil))
        #expect(!change.isSuccess, "\(change.message)")

        // Everyone else is served.
        try d.simulate("touch", "bob-1")
        let (bob, _) = try d.perform(.evaluate(Self.biometrics("bob")))
        #expect(bob.isSuccess, "\(bob.message)")

        // Logged, and the file left exactly as it was (a copy set aside is allowed, and logged).
        #expect(d.daemonLog.contains("stored state of alice is unreadable"), "\(d.daemonLog)")
        let after = try Self.fingerprint(path)
        #expect(after.0 == damaged.0 && after.1 == damaged.1 && after.2 == damaged.2, "the file was changed")
        // A restart changes nothing.
        d.stop()
        try d.start()
        #expect(try d.perform(.status(user: "alice")).0.fields.bool(.biometryLocked) == true)

        // The administrator's reset is the way back; then her finger works again.
        let (reset, _) = try d.perform(.lockoutReset(user: "alice"))
        #expect(reset.isSuccess, "\(reset.message)")
        try d.simulate("touch", "alice-1")
        let (back, _) = try d.perform(.evaluate(Self.biometrics("alice")))
        #expect(back.isSuccess, "\(back.message)")
    }

    /// CRC-32 (zlib's), to write a record as a newer version would: whole, its seal holding.
    static func crc32(_ bytes: Data) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return crc ^ 0xFFFF_FFFF
    }

    /// A record written by a newer localauthd (a downgrade, to be undone by the upgrade again): said
    /// as such, never advised to be reset, and `lockout reset` refuses to write over it (before: the
    /// journal said "unreadable … until `localauthctl lockout reset`", and the reset replaced the
    /// newer record — its lockout lifted, its passcode cleared), nor copied aside as corrupt.
    /// Refused meanwhile, fail closed.
    @Test func stateOfANewerVersion_isSaidAsSuch_andLockoutResetKeepsIt() async throws {
        let d = try await DaemonHarness.withAlicesFinger()
        #expect(try d.perform(.passcodeSet(user: "alice", passcode: "alice passcode", oldPasscode: nil)).0.isSuccess)
        for _ in 1...5 {
            try d.simulate("touch", "mallory")
            _ = try d.perform(.evaluate(Self.biometrics("alice")))
        }
        d.stop()

        // The newer version's record: its own version line and a field this one does not know.
        let path = d.stateDirectory + "/users/alice/state"
        let old = try String(contentsOfFile: path, encoding: .utf8)
        var lines = old.split(separator: "\n").map(String.init)
        #expect(lines.first == "localauthd-user-state 1" && lines.last?.hasPrefix("crc32=") == true)
        lines.removeLast()
        lines[0] = "localauthd-user-state 2"
        lines.append("futureField=7")
        let body = Data((lines.joined(separator: "\n") + "\n").utf8)
        let crc = String(Self.crc32(body), radix: 16)
        try (body + Data(("crc32=" + String(repeating: "0", count: 8 - crc.count) + crc + "\n").utf8)).write(
            to: URL(fileURLWithPath: path))
        #expect(chmod(path, 0o600) == 0)
        let newer = try Self.fingerprint(path)
        try d.start()

        // Refused, fail closed, without a finger asked for.
        #expect(try d.perform(.status(user: "alice")).0.fields.bool(.biometryLocked) == true)
        let (evaluation, events) = try d.perform(.evaluate(Self.biometrics("alice")))
        #expect(!evaluation.isSuccess && !events.contains { $0.kind == .placeFinger }, "\(evaluation.message)")
        #expect(evaluation.message.contains("written by a newer version of localauthd"), "\(evaluation.message)")

        // The journal names the version problem and gives no advice that destroys the record.
        #expect(
            d.daemonLog.contains(
                "stored state of alice was written by a newer version of localauthd (")
                && d.daemonLog.contains("/users/alice/state: record version 2, newer than this localauthd's 1)"),
            "\(d.daemonLog)")
        #expect(!d.daemonLog.contains("lockout reset"), "\(d.daemonLog)")
        // Nor is it copied aside as damage (before: `state.corrupt-<ms>` beside it, and "corrupt record
        // copied" in the journal): the record stays alone, as the newer version wrote it.
        let beside = try FileManager.default.contentsOfDirectory(atPath: d.stateDirectory + "/users/alice")
        #expect(!beside.contains { $0.hasPrefix("state.") }, "\(beside)")
        #expect(!d.daemonLog.contains("corrupt record copied"), "\(d.daemonLog)")

        // The administrator's reset refuses, says why, and leaves the record as the newer version wrote it.
        let reset = try d.ctl(["lockout", "reset", "--user", "alice"])
        #expect(reset.status != 0, "\(reset.out)")
        #expect(reset.err.contains("written by a newer version of localauthd (record version 2"), "\(reset.err)")
        let after = try Self.fingerprint(path)
        #expect(after.0 == newer.0 && after.1 == newer.1 && after.2 == newer.2, "the newer record was changed")
        #expect(try d.perform(.status(user: "alice")).0.fields.bool(.biometryLocked) == true)

        // Discarding it is a deliberate act: the file removed, then the reset writes a fresh record.
        #expect(unlink(path) == 0)
        #expect(try d.ctl(["lockout", "reset", "--user", "alice"]).status == 0)
        try d.simulate("touch", "alice-1")
        let (back, _) = try d.perform(.evaluate(Self.biometrics("alice")))
        #expect(back.isSuccess, "\(back.message)")
    }
}
