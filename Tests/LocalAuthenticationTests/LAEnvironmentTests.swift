// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthProtocol
import Testing

@testable import LocalAuthentication

/// `LAEnvironment` against the real daemon (as root), and the mapping of the daemon's answer.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct LAEnvironmentTests {
    static func environment(_ d: Daemon) -> LAEnvironment {
        let environment = LAEnvironment()
        environment.socketPath = d.socketPath
        environment.pollInterval = 0.1
        return environment
    }

    @Test func state_followsEnrolmentPasscodeAndLockout() async throws {
        let d = try Daemon()
        let environment = Self.environment(d)
        let before = try #require(environment.state.biometry)
        #expect(before.biometryType == .touchID && !before.isEnrolled && !before.isUsable)
        #expect(environment.state.userPassword?.isSet == false)
        #expect(environment.state.companions.isEmpty)

        try await d.enroll(printID: "root-1")
        try d.setPasscode("open sesame")
        let enrolled = try #require(environment.state.biometry)
        #expect(enrolled.isEnrolled && enrolled.isUsable && !enrolled.isLockedOut)
        #expect(enrolled.stateHash.count == 32)
        #expect(environment.state.userPassword?.isSet == true)
        #expect(environment.state.allMechanisms.count == 2)

        let context = d.context()
        for _ in 0..<5 {
            try d.touch("mallory-1")
            _ = await evaluationError(context, reason: "miss")
        }
        let locked = try #require(environment.state.biometry)
        #expect(locked.isLockedOut && !locked.isUsable)
    }

    @Test func state_withoutAReader_hasNoBiometry() throws {
        let d = try Daemon(virtualReader: false)
        #expect(Self.environment(d).state.biometry == nil)
    }

    @Test func state_whenTheLidIsClosed_saysBuiltInSensorInaccessible() {
        var f = Frame(.result)
        f.append(.biometryType, int: 1)
        f.append(.domainState, bytes: [UInt8](repeating: 7, count: 32))
        f.append(.passcodeSet, bool: true)
        f.append(.sensorInaccessible, bool: true)
        let state = LAEnvironment.State(
            canEvaluate: RequestResult(.biometryNotAvailable, "lid closed", extra: f.fields))
        #expect(state.biometry?.builtInSensorInaccessible == true)
        #expect(state.biometry?.isUsable == false && state.biometry?.isEnrolled == true)
    }

    final class Recorder: NSObject, LAEnvironment.Observer, @unchecked Sendable {
        let changes = NSLock()
        var old: [LAEnvironment.State] = []
        func environment(_ environment: LAEnvironment, stateDidChangeFromOldState oldState: LAEnvironment.State) {
            changes.withLock { old.append(oldState) }
        }
    }

    @Test func observer_isToldWhenAFingerIsEnrolled() async throws {
        let d = try Daemon()
        let environment = Self.environment(d)
        let recorder = Recorder()
        environment.addObserver(recorder)
        defer { environment.removeObserver(recorder) }
        try await d.enroll(printID: "root-1")
        let deadline = Date().addingTimeInterval(10)
        while recorder.changes.withLock({ recorder.old.isEmpty }) && Date() < deadline {
            try await Task.sleep(for: .milliseconds(50))  // the observer is polled: nothing to wait on
        }
        let old = try #require(recorder.changes.withLock { recorder.old.first })
        #expect(old.biometry?.isEnrolled == false)
        #expect(environment.state.biometry?.isEnrolled == true)
    }
}

/// `setCredential(_:type:)` and `isCredentialSet(_:)`: the app's password answers the daemon.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct LACredentialTests {
    @Test func applicationPassword_answersThePasscodeQuestionWithoutAPrompt() async throws {
        let d = try Daemon()
        try d.setPasscode("open sesame")
        let context = d.context()  // no prompt: without the credential this is notInteractive
        #expect(!context.isCredentialSet(.applicationPassword))
        #expect(context.setCredential(Data("open sesame".utf8), type: .applicationPassword))
        #expect(context.isCredentialSet(.applicationPassword))
        #expect(await evaluationError(context, .deviceOwnerAuthentication, reason: "Unlock") == nil)
    }

    @Test func applicationPassword_whenWrong_failsAndCounts() async throws {
        let d = try Daemon()
        try d.setPasscode("open sesame")
        let context = d.context()
        context.setCredential(Data("not it at all".utf8), type: .applicationPassword)
        #expect(await evaluationError(context, .deviceOwnerAuthentication, reason: "Unlock") != nil)
        context.setCredential(nil, type: .applicationPassword)
        #expect(!context.isCredentialSet(.applicationPassword))
        #expect(await evaluationError(context, .deviceOwnerAuthentication, reason: "Unlock")?.code == .notInteractive)
    }

    @Test func smartCardPIN_isNotSupported() {
        let context = LAContext()
        #expect(!context.setCredential(Data("1234".utf8), type: .smartCardPIN))
        #expect(!context.isCredentialSet(.smartCardPIN))
    }
}
