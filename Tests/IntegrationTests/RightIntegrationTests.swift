// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthProtocol
import LocalAuthTesting
import Testing

/// Rights through the real daemon and `localauthctl right`, with real uids (`setpriv`): the owner is
/// `nobody` (65534), the other user `daemon` (1). A secret is released only in the request whose
/// own evaluation succeeded, only to its owner; root may remove a right, never read it; the
/// journal never carries the secret; a state directory away from its key does not start.
@Suite(.onOwnThreads, .timeLimit(.minutes(3)))
struct RightIntegrationTests {
    static let owner = "nobody"
    static let ownerUID = "65534"
    static let secret = "correct horse battery staple"

    /// A daemon, stopped, that kept the owner's right; and the path of its sealing key.
    static func stoppedWithTheOwnersRight() async throws -> (DaemonHarness, key: String) {
        let d = try DaemonHarness(extraArguments: RightOwnershipTests.keepReaderOpen)
        try await ownerWithRight(d)
        #expect(d.stop() == 0)
        return (d, d.stateDirectory + "-key/sealing.key")
    }

    /// The owner's finger releases the right's secret.
    static func expectTheOwnersFingerReleasesTheSecret(
        _ d: DaemonHarness, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        try d.simulate("touch", "owner-1")
        #expect(
            try d.ctl(["right", "secret", "vault"], asUser: ownerUID).out == secret, sourceLocation: sourceLocation)
    }

    static func ownerWithRight(_ d: DaemonHarness, requirement: String = "biometry") async throws {
        try await d.enroll(user: owner, printID: "owner-1")
        let saved = try d.ctl(
            ["right", "save", "vault", "--requirement", requirement, "--secret-stdin"], asUser: ownerUID,
            stdin: secret)
        #expect(saved.status == 0, "\(saved.err)")
    }

    static func use(_ op: RightOperation, user: String) -> Request {
        .rightUse(
            RightUseOptions(user: user, identifier: "vault", operation: op, prompt: PromptOptions(timeoutMs: 3000)))
    }

    @Test func secret_isReleasedByTheOwnersFinger_only() async throws {
        let d = try DaemonHarness(extraArguments: RightOwnershipTests.keepReaderOpen)
        try await Self.ownerWithRight(d)

        try d.simulate("touch", "owner-1")
        let released = try d.ctl(["right", "secret", "vault", "--timeout", "10"], asUser: Self.ownerUID)
        #expect(released.status == 0, "\(released.err)")
        #expect(released.out == Self.secret)

        // Another finger: no secret, however the request ends.
        try d.simulate("touch", "mallory-1")
        let refused = try d.ctl(["right", "secret", "vault", "--timeout", "3"], asUser: Self.ownerUID, stdin: "")
        #expect(refused.status == 1, "\(refused.err)")
        #expect(refused.out.isEmpty)
        #expect(!d.daemonLog.contains(Self.secret), "the journal never carries a secret")
    }

    @Test func right_isNeverReadByRootOrAnotherUser_butRootMayRemoveIt() async throws {
        let d = try DaemonHarness(extraArguments: RightOwnershipTests.keepReaderOpen)
        try await Self.ownerWithRight(d)
        for uid in ["0", "1", "4242"] {
            for request in [Self.use(.loadSecret, user: Self.owner), .rightGet(user: Self.owner, identifier: "vault")] {
                let bytes = Hello(client: "test").frame.encoded() + request.frame.encoded()
                let reply = try AuthorizationMatrixTests.relay(bytes, uid: uid, socket: d.socketPath)
                let result = try frames(in: reply).first { $0.type == .result }.map { try RequestResult(frame: $0) }
                #expect(result?.resultCode == .notAuthorized, "uid \(uid): \(result?.message ?? "no result")")
            }
        }
        // Another user cannot remove it either; root can.
        let other = try d.ctl(["right", "remove", "vault", "--user", Self.owner], asUser: "1")
        #expect(other.status == 3, "\(other.err)")
        let root = try d.ctl(["right", "remove", "vault", "--user", Self.owner])
        #expect(root.status == 0, "\(root.err)")
        let gone = try d.ctl(["right", "show", "vault"], asUser: Self.ownerUID)
        #expect(gone.status == 5 && gone.err.contains("notFound"), "\(gone.err)")
    }

    @Test func currentSetRight_whenTheOwnersFingersChange_isDestroyed() async throws {
        let d = try DaemonHarness(extraArguments: RightOwnershipTests.keepReaderOpen)
        try await Self.ownerWithRight(d, requirement: "biometry-current-set")
        #expect(try d.ctl(["right", "show", "vault"], asUser: Self.ownerUID).status == 0)
        try await d.enroll(user: Self.owner, finger: .leftIndex, printID: "owner-2")
        let gone = try d.ctl(["right", "show", "vault"], asUser: Self.ownerUID)
        #expect(gone.status == 5 && gone.err.contains("notFound"), "\(gone.out) \(gone.err)")
    }

    @Test func saveRight_twice_keepsTheFirstSecret() async throws {
        let d = try DaemonHarness(extraArguments: RightOwnershipTests.keepReaderOpen)
        try await Self.ownerWithRight(d)
        let again = try d.ctl(
            ["right", "save", "vault", "--requirement", "biometry", "--secret-stdin"], asUser: Self.ownerUID,
            stdin: "malware's secret")
        #expect(again.status == 5, "\(again.err)")
        try Self.expectTheOwnersFingerReleasesTheSecret(d)
    }

    @Test func daemon_whenTheStateDirectoryIsAwayFromItsKey_refusesToStartAndSaysWhy() async throws {
        let (d, key) = try await Self.stoppedWithTheOwnersRight()
        // "Another machine": the state directory without this machine's key file beside it.
        #expect(rename(key, d.directory + "/kept.key") == 0)
        #expect(throws: HarnessError.self) { try d.start(extraArguments: RightOwnershipTests.keepReaderOpen) }
        #expect(d.daemonLog.contains("moved from another machine"), "\(d.daemonLog)")
        // Back on its machine, everything is there.
        #expect(rename(d.directory + "/kept.key", key) == 0)
        try d.start(extraArguments: RightOwnershipTests.keepReaderOpen)
        try Self.expectTheOwnersFingerReleasesTheSecret(d)
    }

    /// Versions before 0.2 kept the default key at `<state>.key`, which the shipped unit cannot
    /// write (`/var/lib` is read-only under `ProtectSystem=strict`): the key moves into the key
    /// directory beside the state directory, and everything sealed with it still opens.
    @Test func daemon_whenTheKeyIsWhereAnOlderVersionKeptIt_movesItIntoTheKeyDirectoryAndOpens() async throws {
        let (d, key) = try await Self.stoppedWithTheOwnersRight()
        #expect(rename(key, d.stateDirectory + ".key") == 0)
        #expect(rmdir(d.stateDirectory + "-key") == 0)
        try d.start(extraArguments: RightOwnershipTests.keepReaderOpen)
        #expect(access(key, F_OK) == 0, "the key moved into the key directory")
        #expect(access(d.stateDirectory + ".key", F_OK) != 0, "no second copy left behind")
        var st = stat()
        #expect(stat(d.stateDirectory + "-key", &st) == 0 && st.st_mode & 0o7777 == 0o700)
        #expect(d.daemonLog.contains("moved the key file"), "\(d.daemonLog)")
        try Self.expectTheOwnersFingerReleasesTheSecret(d)
    }
}
