// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthProtocol
import LocalAuthTesting
import Testing

@testable import LocalAuthentication

/// `LAEnvironment` against the real daemon (as root), and the mapping of the daemon's answer.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct LAEnvironmentTests {
    static func environment(_ d: Daemon) -> LAEnvironment {
        let environment = LAEnvironment()
        environment.socketPath = d.socketPath
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

        // A wrong finger each time the daemon asks for one (three misses, then two): locked, without
        // waiting out a timeout after each miss (40 s before).
        let wrongFinger = PromptRecorder(onMessage: { message in
            if message.kind == .placeFinger || message.kind == .noMatch {
                DispatchQueue.global().async { try? d.touch("mallory-1") }
            }
        })
        let context = d.context(prompt: wrongFinger.prompt)
        for _ in 0..<2 { _ = await evaluationError(context, reason: "miss") }
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

    /// As the real daemon answers with the lid closed: no usable biometry type, the sensor
    /// inaccessible. The reader is there (before, this read as "no biometry at all").
    @Test func state_whenTheLidIsClosedAndNoTypeIsUsable_stillHasTheBuiltInReader() {
        var f = Frame(.result)
        f.append(.biometryType, int: 0)
        f.append(.sensorInaccessible, bool: true)
        let state = LAEnvironment.State(
            canEvaluate: RequestResult(.biometryNotAvailable, "lid closed", extra: f.fields))
        #expect(state.biometry?.builtInSensorInaccessible == true)
        #expect(state.biometry?.biometryType == .touchID && state.biometry?.isUsable == false)
    }

    /// Records each call: the old state, the state `environment.state` read inside the call, and
    /// whether the call came on the environment's private queue (not the main thread).
    final class Recorder: NSObject, LAEnvironment.Observer, @unchecked Sendable {
        struct Call {
            let old: LAEnvironment.State
            let new: LAEnvironment.State
            let onPrivateQueue: Bool
        }
        static let queueKey = DispatchSpecificKey<Int>()
        let lock = NSLock()
        private var calls: [Call] = []
        /// Counts calls beyond the recorder's life (an observer deallocated must get none).
        let tally: Tally

        init(tally: Tally = Tally()) { self.tally = tally }

        func environment(_ environment: LAEnvironment, stateDidChangeFromOldState oldState: LAEnvironment.State) {
            let onPrivateQueue = DispatchQueue.getSpecific(key: Self.queueKey) == 1 && !Thread.isMainThread
            let call = Call(old: oldState, new: environment.state, onPrivateQueue: onPrivateQueue)
            lock.withLock { calls.append(call) }
            tally.add()
        }

        var count: Int { lock.withLock { calls.count } }

        /// Waits (at most 15 s) for a call after the first `after` that satisfies `matching`.
        func waitForCall(after: Int, _ matching: (Call) -> Bool) async throws -> Call? {
            let deadline = Date().addingTimeInterval(15)
            while Date() < deadline {
                if let call = lock.withLock({ calls.dropFirst(after).first(where: matching) }) { return call }
                try await Task.sleep(for: .milliseconds(50))
            }
            return nil
        }
    }

    final class Tally: @unchecked Sendable {
        private let lock = NSLock()
        private var n = 0
        func add() { lock.withLock { n += 1 } }
        var count: Int { lock.withLock { n } }
    }

    /// An environment of `d` with `recorder` added, once its watch is in place.
    static func observed(_ d: Daemon, by recorder: Recorder) async throws -> LAEnvironment {
        let environment = Self.environment(d)
        environment.observerQueue.setSpecific(key: Recorder.queueKey, value: 1)
        environment.addObserver(recorder)
        let deadline = Date().addingTimeInterval(10)
        while environment.watchesInPlace == 0 && Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        try #require(environment.watchesInPlace == 1, "the watch was not in place")
        return environment
    }

    /// Each change of root's environment through the real daemon reaches the observer, on the
    /// private queue, with `state` already the new one: a finger enrolled, deleted, five wrong
    /// fingers (locked), the lockout reset, a passcode set, the reader unplugged (and found again).
    @Test func observer_isToldOfEachChange_onThePrivateQueue_withTheNewStateAlreadyRead() async throws {
        let d = try Daemon()
        let recorder = Recorder()
        let environment = try await Self.observed(d, by: recorder)
        defer { environment.removeObserver(recorder) }

        var seen = recorder.count
        try await d.enroll(printID: "root-1")
        let enrolled = try #require(
            await recorder.waitForCall(after: seen) { $0.new.biometry?.isEnrolled == true }, "enrolment not told")
        #expect(enrolled.old.biometry?.isEnrolled == false)
        #expect(enrolled.new.biometry?.stateHash.count == 32)
        #expect(enrolled.onPrivateQueue)

        seen = recorder.count
        #expect(try d.perform(.delete(user: "root", finger: .rightIndex, all: false)).isSuccess)
        let deleted = try #require(
            await recorder.waitForCall(after: seen) { $0.new.biometry?.isEnrolled == false }, "deletion not told")
        #expect(deleted.old.biometry?.stateHash == enrolled.new.biometry?.stateHash)

        try await d.enroll(printID: "root-1")
        seen = recorder.count
        // A wrong finger each time the daemon asks for one: three misses, then two, locked.
        let wrongFinger = PromptRecorder(onMessage: { message in
            if message.kind == .placeFinger || message.kind == .noMatch {
                DispatchQueue.global().async { try? d.touch("mallory-1") }
            }
        })
        let context = d.context(prompt: wrongFinger.prompt)
        for _ in 0..<2 { _ = await evaluationError(context, reason: "miss") }
        let locked = try #require(
            await recorder.waitForCall(after: seen) { $0.new.biometry?.isLockedOut == true }, "lockout not told")
        #expect(locked.old.biometry?.isLockedOut == false && locked.new.biometry?.isUsable == false)

        seen = recorder.count
        #expect(try d.perform(.lockoutReset(user: "root")).isSuccess)
        let reset = try #require(
            await recorder.waitForCall(after: seen) { $0.new.biometry?.isLockedOut == false }, "reset not told")
        #expect(reset.old.biometry?.isLockedOut == true && reset.new.biometry?.isUsable == true)

        seen = recorder.count
        try d.setPasscode("open sesame")
        let passcode = try #require(
            await recorder.waitForCall(after: seen) { $0.new.userPassword?.isSet == true }, "the passcode not told")
        #expect(passcode.old.userPassword?.isSet == false)

        // The virtual reader comes back at the next enumeration, which the observer's own read of the
        // state starts: by the time an observer reads `state` the reader may be back. So the state
        // without a reader shows as the `oldState` of the next call: told going, then coming back.
        seen = recorder.count
        try d.harness.simulate("unplug")
        let back = try #require(
            await recorder.waitForCall(after: seen) { $0.old.biometry == nil }, "the unplugged reader not told")
        #expect(back.new.biometry?.isEnrolled == true)
        let gone = try #require(await recorder.waitForCall(after: seen) { _ in true })
        #expect(gone.old.biometry?.biometryType == .touchID, "the reader's going was not told first")
    }

    /// The lid, as python-dbusmock's logind says it (polled by the daemon while anyone watches):
    /// closed over the built-in (virtual) reader, the observer is told `builtInSensorInaccessible`;
    /// opened, told again.
    @Test func observer_whenTheLidClosesAndOpens_isToldBuiltInSensorInaccessible() async throws {
        let logind = try MockLogind(greeter: true)
        let harness = try DaemonHarness(
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": logind.address], seat: .given)
        let environment = LAEnvironment()
        environment.socketPath = harness.socketPath
        environment.observerQueue.setSpecific(key: Recorder.queueKey, value: 1)
        let recorder = Recorder()
        environment.addObserver(recorder)
        defer { environment.removeObserver(recorder) }
        let deadline = Date().addingTimeInterval(10)
        while environment.watchesInPlace == 0 && Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        try #require(environment.state.biometry?.builtInSensorInaccessible == false)

        try logind.send("lid closed")
        let closed = try #require(
            await recorder.waitForCall(after: 0) { $0.new.biometry?.builtInSensorInaccessible == true },
            "the closed lid not told")
        #expect(closed.old.biometry?.builtInSensorInaccessible == false && closed.onPrivateQueue)
        let seen = recorder.count
        try logind.send("lid open")
        #expect(
            try await recorder.waitForCall(after: seen) { $0.new.biometry?.builtInSensorInaccessible == false } != nil,
            "the opened lid not told")
    }

    /// Observers are held weakly: one deallocated is not kept alive by the environment, is never
    /// called, and with none left the watch (its connection to the daemon) ends.
    @Test func observer_deallocated_isNotRetainedNorCalled_andTheWatchEnds() async throws {
        let d = try Daemon()
        let tally = Tally()
        let environment = Self.environment(d)
        weak var gone: Recorder?
        do {
            let recorder = Recorder(tally: tally)
            gone = recorder
            environment.addObserver(recorder)
            let deadline = Date().addingTimeInterval(10)
            while environment.watchesInPlace == 0 && Date() < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(environment.isWatching)
        }
        #expect(gone == nil, "the environment kept the observer alive")
        try await d.enroll(printID: "root-1")
        let deadline = Date().addingTimeInterval(30)  // a hang's bound: the watch ends when it sees the change
        while environment.isWatching && Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(!environment.isWatching, "the watch outlived its observers")
        #expect(tally.count == 0, "a deallocated observer was called")
    }

    /// The daemon restarted (an upgrade, a crash): the watch connects again by itself and the
    /// observer is told of the next change.
    @Test func observer_afterTheDaemonRestarts_isToldAgain() async throws {
        let d = try Daemon()
        let recorder = Recorder()
        let environment = try await Self.observed(d, by: recorder)
        defer { environment.removeObserver(recorder) }
        d.harness.stop()
        try d.harness.start()
        let deadline = Date().addingTimeInterval(15)
        while environment.watchesInPlace < 2 && Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(environment.watchesInPlace == 2, "the watch did not connect again")
        try await d.enroll(printID: "root-1")
        #expect(
            try await recorder.waitForCall(after: 0) { $0.new.biometry?.isEnrolled == true } != nil,
            "the change after the restart was not told")
    }

    /// Two observers, one removed: only the other is told; removing the last ends the watch.
    @Test func removeObserver_stopsItsCalls_andTheLastOneEndsTheWatch() async throws {
        let d = try Daemon()
        let kept = Recorder()
        let removed = Recorder()
        let environment = try await Self.observed(d, by: kept)
        environment.addObserver(removed)
        environment.removeObserver(removed)
        try await d.enroll(printID: "root-1")
        #expect(try await kept.waitForCall(after: 0) { $0.new.biometry?.isEnrolled == true } != nil)
        #expect(removed.count == 0)
        environment.removeObserver(kept)
        #expect(!environment.isWatching)
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
