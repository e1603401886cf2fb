// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthProtocol
import LocalAuthTesting
import Testing

/// Issue 13, C1: a first passcode needs root, or an enrolled finger in the same request. Before,
/// any process of the user (a passer-by at an unlocked desk, malware) could set one, and that
/// passcode then proved presence: it enrolled a new finger (a), lifted the biometric lockout round
/// after round (b) and passed an owner-policy stack (c). The account is `nobody` (uid 65534), an
/// ordinary uid; `localauthctl` runs as it through `setpriv`. The reader never closes
/// (`--linger-ms -1`), so a touch can be queued before the request that reads it.
@Suite(.onOwnThreads, .timeLimit(.minutes(2)))
struct FirstPasscodeTests {
    static let user = "nobody"
    static let uid = "65534"

    static func daemon() throws -> DaemonHarness { try DaemonHarness(extraArguments: ["--linger-ms", "-1"]) }

    static func status(_ d: DaemonHarness) throws -> Frame { try d.perform(.status(user: user)).0.fields }

    @Test func passcode_firstSetByTheUserWithoutTheirFinger_isRefused_soAPasserByCannotEnrolTheirOwnFinger()
        async throws
    {
        let d = try Self.daemon()
        try await d.enroll(user: Self.user, printID: "owner")
        // The passer-by's finger is not the owner's: the request that asks for the owner's finger misses.
        try d.simulate("touch", "passer-by")
        let set = try d.ctl(["passcode", "set"], asUser: Self.uid, stdin: "chosen by the passer-by\n")
        #expect(set.status != 0, "a first passcode was set without the owner's finger: \(set.out)")
        #expect(set.err.contains("A first passcode needs an enrolled finger, or root"), "\(set.err)")
        #expect(try Self.status(d).bool(.passcodeSet) == false)
        // (a): one wrong touch, then the passcode they chose, then five touches of their own finger.
        try d.simulate("touch", "passer-by")
        for _ in 0..<5 { try d.simulate("touch", "passer-by") }
        let enrol = try d.ctl(
            ["enroll", "--finger", "left-thumb"], asUser: Self.uid, stdin: "chosen by the passer-by\n")
        #expect(enrol.status != 0, "the passer-by enrolled a finger: \(enrol.out)")
        #expect(try d.perform(.list(user: Self.user)).0.fields.strings(.finger) == ["right-index-finger"])
        // Line by line: caller_pid and caller_program stand between the caller's uid and the result.
        let setLines = d.daemonLog.split(separator: "\n").filter { $0.contains("op=passcodeSet user=\"nobody\"") }
        #expect(!setLines.contains { $0.contains("result=success") }, "\(setLines)")
    }

    @Test func passcode_firstSetByTheUser_cannotLiftTheBiometricLockout() async throws {
        let d = try Self.daemon()
        try await d.enroll(user: Self.user, printID: "owner")
        for _ in 0..<5 { try d.simulate("touch", "guess") }
        _ = try d.ctl(["verify", "--timeout", "10"], asUser: Self.uid)  // three misses
        let locked = try d.ctl(["verify", "--timeout", "10"], asUser: Self.uid)  // two more: locked
        #expect(locked.status == 2, "\(locked.err)")
        #expect(try Self.status(d).bool(.biometryLocked) == true)
        // (b): a passcode of their own, then that passcode lifts the lockout.
        let set = try d.ctl(["passcode", "set"], asUser: Self.uid, stdin: "lifts the lockout\n")
        #expect(set.status != 0, "a first passcode was set while biometrics were locked: \(set.out)")
        let lifted = try d.ctl(
            ["verify", "--passcode", "--timeout", "10"], asUser: Self.uid, stdin: "lifts the lockout\n")
        #expect(lifted.status != 0, "a self-made passcode lifted the lockout")
        #expect(try Self.status(d).bool(.biometryLocked) == true)
    }

    @Test func passcode_firstSetByTheUserWithNoFinger_needsRoot_andPassesNoOwnerPolicy() throws {
        let d = try Self.daemon()
        // (c): malware sets a passcode, then answers an owner-policy evaluation with it.
        let set = try d.ctl(["passcode", "set"], asUser: Self.uid, stdin: "chosen by malware\n")
        #expect(set.status != 0, "a first passcode was set with no proof at all: \(set.out)")
        #expect(set.err.contains("sudo localauthctl passcode set --user nobody"), "\(set.err)")
        let owner = try d.ctl(
            ["verify", "--passcode", "--timeout", "10"], asUser: Self.uid, stdin: "chosen by malware\n")
        #expect(owner.status == 2, "an owner-policy evaluation passed with malware's passcode: \(owner.out)")
        // Root still sets a first passcode without any proof.
        let byRoot = try d.ctl(["passcode", "set", "--user", Self.user], stdin: "chosen by root\n")
        #expect(byRoot.status == 0, "\(byRoot.err)")
    }

    @Test func passcode_firstSetByTheUser_withTheirEnrolledFinger_succeeds() async throws {
        let d = try Self.daemon()
        try await d.enroll(user: Self.user, printID: "owner")
        try d.simulate("touch", "owner")
        let set = try d.ctl(["passcode", "set"], asUser: Self.uid, stdin: "set with my finger\n")
        #expect(set.status == 0, "\(set.err)")
        #expect(set.out.contains("Place your right index finger"), "the proof's prompt is shown: \(set.out)")
        #expect(try Self.status(d).bool(.passcodeSet) == true)
    }

    /// Other paths a user's own processes might use to lift a lockout: deleting a finger, or
    /// removing the passcode (which needs the current one) and setting a first one again.
    @Test func lockout_isLiftedNeitherByDeletingAFingerNorByRemovingAndSettingThePasscode() async throws {
        let d = try Self.daemon()
        try await d.enroll(user: Self.user, finger: .rightIndex, printID: "owner")
        try await d.enroll(user: Self.user, finger: .leftIndex, printID: "owner-2")
        #expect(try d.perform(.passcodeSet(user: Self.user, passcode: "set by root", oldPasscode: nil)).0.isSuccess)
        for _ in 0..<5 { try d.simulate("touch", "guess") }
        _ = try d.ctl(["verify", "--timeout", "10"], asUser: Self.uid)
        _ = try d.ctl(["verify", "--timeout", "10"], asUser: Self.uid)
        #expect(try Self.status(d).bool(.biometryLocked) == true)
        let deleted = try d.ctl(["delete", "--finger", "left-index-finger"], asUser: Self.uid)
        #expect(deleted.status == 0, "\(deleted.err)")
        #expect(try Self.status(d).bool(.biometryLocked) == true)
        let removed = try d.ctl(["passcode", "remove"], asUser: Self.uid, stdin: "set by root\n")
        #expect(removed.status == 0, "\(removed.err)")
        let again = try d.ctl(["passcode", "set"], asUser: Self.uid, stdin: "a fresh one\n")
        #expect(again.status != 0, "a first passcode was set again while locked: \(again.out)")
        #expect(try Self.status(d).bool(.biometryLocked) == true)
    }
}
