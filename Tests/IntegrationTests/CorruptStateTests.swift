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
}
