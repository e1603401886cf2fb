// SPDX-License-Identifier: Apache-2.0
// `Daemon.handle`, the entry every door uses, in process and without a reader: what a door's caller
// is refused or told before any reader or policy is involved.

import Foundation
import Glibc
import LocalAuthDaemon
import LocalAuthProtocol
import LocalAuthSocketDoor
import LocalAuthStore
import LocalAuthSystemd
import LocalAuthTesting
import Testing

@Suite struct DaemonDispatchTests {
    /// Runs `body` with a daemon without a reader over a fresh store, and that store.
    static func withDaemon(_ body: (Daemon, EnrollmentStore) async throws -> Void) async throws {
        let directory = try TemporaryDirectory.make("la-daemon-test")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try EnrollmentStore(stateDirectory: directory + "/state")
        try await body(Daemon(reader: nil, store: store, audit: AuditLog(level: .critical, sink: .stderr)), store)
    }

    /// The answer is `code`, its message says `words`, and the store holds nothing for `user`.
    static func expectRefused(
        _ result: RequestResult, _ code: ResultCode, saying words: String, nothingWrittenFor user: String,
        in store: EnrollmentStore, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        #expect(result.resultCode == code, sourceLocation: sourceLocation)
        #expect(result.message.contains(words), "\(result.message)", sourceLocation: sourceLocation)
        let stored = try store.loadState(user: user)
        #expect(stored == .absent, "nothing is written for \(user)", sourceLocation: sourceLocation)
    }

    static func silentIO() -> RequestIO {
        RequestIO(send: { _ in }, signals: AsyncStream { $0.finish() })
    }

    static let alice = PeerCredentials(pid: getpid(), uid: 4711, gid: 4711, userName: "lasplit-alice")

    @Test func handle_whenAUserSetsAnotherAccountsPasscode_refusesAndWritesNothing() async throws {
        try await Self.withDaemon { daemon, store in
            let result = await daemon.handle(
                .passcodeSet(user: "lasplit-bob", passcode: "intruder's choice", oldPasscode: nil), caller: Self.alice,
                io: Self.silentIO()
            ).result
            try Self.expectRefused(
                result, .notAuthorized, saying: "may act only for its own account", nothingWrittenFor: "lasplit-bob",
                in: store)
        }
    }

    @Test func handle_whenTheCallerHasNoAccountAndNamesNone_asksForAUserName() async throws {
        try await Self.withDaemon { daemon, _ in
            let nameless = PeerCredentials(pid: getpid(), uid: 4242, gid: 4242, userName: nil)
            let result = await daemon.handle(
                .evaluate(EvaluateOptions(policy: .deviceOwnerAuthenticationWithBiometrics)), caller: nameless,
                io: Self.silentIO()
            ).result
            #expect(result.resultCode == .invalidRequest)
            #expect(result.message == "uid 4242 has no account name; name the user")
        }
    }

    @Test func handle_whenRootNamesAnInvalidUser_refusesTheNameBeforeTheStoreSeesIt() async throws {
        try await Self.withDaemon { daemon, _ in
            let root = PeerCredentials(pid: getpid(), uid: 0, gid: 0, userName: "root")
            let result = await daemon.handle(.list(user: "../etc"), caller: root, io: Self.silentIO()).result
            #expect(result.resultCode == .invalidRequest)
            #expect(result.message == "'../etc' is not a valid user name")
        }
    }

    @Test func handle_withoutAReader_answersBiometryNotAvailableForAFingerOnlyEvaluation() async throws {
        try await Self.withDaemon { daemon, store in
            let result = await daemon.handle(
                .evaluate(
                    EvaluateOptions(policy: .deviceOwnerAuthenticationWithBiometrics, user: "lasplit-alice", tries: 1)),
                caller: Self.alice, io: Self.silentIO()
            ).result
            try Self.expectRefused(
                result, .biometryNotAvailable, saying: "no fingerprint reader is connected",
                nothingWrittenFor: "lasplit-alice", in: store)
        }
    }

    @Test func handle_simulateWithoutAVirtualReader_isNotSupported() async throws {
        try await Self.withDaemon { daemon, _ in
            let root = PeerCredentials(pid: getpid(), uid: 0, gid: 0, userName: "root")
            let result = await daemon.handle(
                .simulate(action: "touch", argument: "x"), caller: root, io: Self.silentIO()
            ).result
            #expect(result.resultCode == .notSupported)
        }
    }
}
