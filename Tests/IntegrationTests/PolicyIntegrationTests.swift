// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthProtocol
import LocalAuthTesting
import Testing

/// LAContext's rules enforced by the real daemon: lockouts that survive restarts and kill -9,
/// the passcode fallback and its delays, the domain state and the reuse window's scope.
@Suite(.onOwnThreads, .timeLimit(.minutes(2)))
struct PolicyIntegrationTests {
    static func biometrics(
        service: String = "test", tty: String? = nil, reuse: Int64 = 0, timeoutMs: Int64 = 10_000
    ) -> EvaluateOptions {
        EvaluateOptions(
            policy: .deviceOwnerAuthenticationWithBiometrics, user: "alice", service: service, tty: tty,
            reuseSeconds: reuse, tries: 1, timeoutMs: timeoutMs)
    }

    static let owner = EvaluateOptions(
        policy: .deviceOwnerAuthentication, user: "alice", service: "test", flags: [.passcodeCapable], tries: 1,
        timeoutMs: 10_000)

    /// Enrols alice and sets her passcode.
    static func aliceWithPasscode(_ d: DaemonHarness, passcode: String = "correct horse") async throws {
        try await d.enroll(user: "alice", printID: "alice-1")
        let (set, _) = try d.perform(.passcodeSet(user: "alice", passcode: passcode, oldPasscode: nil))
        #expect(set.isSuccess, "\(set.message)")
    }

    /// Answers the first passcode question with `passcode`, and gives up (CANCEL) when asked again.
    static func typing(_ passcode: String) -> (Event) -> EventReply? {
        var asked = 0
        return { event in
            guard event.kind == .passcodeNeeded else { return nil }
            asked += 1
            return asked == 1 ? .passcode(passcode) : .cancel
        }
    }

    static func miss(_ d: DaemonHarness) throws -> RequestResult {
        try d.simulate("touch", "mallory")
        return try d.perform(.evaluate(biometrics())).0
    }

    static func canEvaluate(_ d: DaemonHarness, _ policy: PolicyKind = .deviceOwnerAuthenticationWithBiometrics)
        throws -> RequestResult
    {
        try d.perform(.canEvaluate(policy: policy, user: "alice")).0
    }

    @Test func evaluate_whenFiveFingersMiss_locksBiometricsUntilPasscode() async throws {
        let d = try DaemonHarness()
        try await Self.aliceWithPasscode(d)
        for attempt in 1...4 {
            #expect(try Self.miss(d).resultCode == .authenticationFailed, "miss \(attempt)")
        }
        #expect(try Self.miss(d).resultCode == .biometryLockout)
        #expect(try Self.canEvaluate(d).resultCode == .biometryLockout)
        // Even the right finger is no longer asked for.
        let (locked, _) = try d.perform(.evaluate(Self.biometrics()))
        #expect(locked.resultCode == .biometryLockout)

        // The owner policy goes straight to the passcode, and a correct one unlocks biometrics.
        let (unlocked, events) = try d.perform(.evaluate(Self.owner), onEvent: Self.typing("correct horse"))
        #expect(unlocked.isSuccess, "\(unlocked.message)")
        #expect(events.contains { $0.kind == .passcodeNeeded })
        #expect(try Self.canEvaluate(d).isSuccess)
    }

    @Test func lockout_whenDaemonRestarts_isKept() async throws {
        let d = try await DaemonHarness.withAlicesFinger()
        for _ in 1...5 { _ = try Self.miss(d) }
        #expect(d.stop() == 0)
        try d.start()
        #expect(try Self.canEvaluate(d).resultCode == .biometryLockout)
    }

    /// The fifth miss is persisted before the client learns of it: kill -9 the moment it shows.
    @Test func lockout_whenKilledBetweenFifthMissAndReply_isKept() async throws {
        let d = try await DaemonHarness.withAlicesFinger()
        for _ in 1...4 { _ = try Self.miss(d) }
        try d.simulate("touch", "mallory")
        let c = try d.connect()
        try c.send(Request.evaluate(Self.biometrics()).frame)
        reading: while true {
            switch try c.receive(deadline: DaemonConnection.now() + 30_000) {
            case .event(let e) where e.kind == .noMatch || e.kind == .biometryLocked: break reading
            case .result(let r): Issue.record("the failure was not revealed before the result: \(r.message)")
            default: continue
            }
        }
        d.kill9()
        try d.start()
        #expect(try Self.canEvaluate(d).resultCode == .biometryLockout)
    }

    @Test func evaluate_whenSixPasscodesAreWrong_reportsAndEnforcesDelay() async throws {
        let d = try DaemonHarness()
        try await Self.aliceWithPasscode(d)
        let (_, _) = try d.perform(.delete(user: "alice", finger: nil, all: true))  // passcode only from here
        var delays: [Int64] = []
        for attempt in 1...6 {
            let (r, events) = try d.perform(.evaluate(Self.owner), onEvent: Self.typing("wrong \(attempt)"))
            #expect(!r.isSuccess)
            delays += events.compactMap(\.delayMs)
        }
        let delay = try #require(delays.last, "the sixth wrong passcode must report the delay")
        #expect(delay > 55_000 && delay <= 60_000)
        // The correct passcode is refused while the delay runs, with the time remaining.
        let (refused, _) = try d.perform(.evaluate(Self.owner), onEvent: Self.typing("correct horse"))
        #expect(refused.resultCode == .authenticationFailed)
        #expect(refused.message.contains("minute") || refused.message.contains("second"), "\(refused.message)")
        // And the delay survives a restart.
        d.stop()
        try d.start()
        let (stillRefused, _) = try d.perform(.evaluate(Self.owner), onEvent: Self.typing("correct horse"))
        #expect(stillRefused.resultCode == .authenticationFailed)
    }

    @Test func domainState_changesOnEnrolAndDeleteOnly() async throws {
        let d = try DaemonHarness()
        try await d.enroll(user: "alice", finger: .rightIndex, printID: "alice-1")
        func domain() throws -> [UInt8]? { try Self.canEvaluate(d).fields.bytes(.domainState) }
        let first = try #require(try domain())
        #expect(first.count == 32)

        // Not on a match, a miss, a passcode change or a restart.
        try d.simulate("touch", "alice-1")
        #expect(try d.perform(.evaluate(Self.biometrics())).0.isSuccess)
        _ = try Self.miss(d)
        #expect(try d.perform(.passcodeSet(user: "alice", passcode: "1234", oldPasscode: nil)).0.isSuccess)
        d.stop()
        try d.start()
        #expect(try domain() == first)

        // On an enrolment and on a deletion.
        try await d.enroll(user: "alice", finger: .leftThumb, printID: "alice-2")
        let second = try #require(try domain())
        #expect(second != first)
        #expect(try d.perform(.delete(user: "alice", finger: .leftThumb, all: false)).0.isSuccess)
        let third = try #require(try domain())
        #expect(third != second)
    }

    @Test func reuseWindow_isHonouredOnlyWithinItsScope() async throws {
        let d = try await DaemonHarness.withAlicesFinger()
        try d.simulate("touch", "alice-1")
        let scoped = Self.biometrics(service: "sudo", tty: "/dev/pts/1", reuse: 60, timeoutMs: 1500)
        #expect(try d.perform(.evaluate(scoped)).0.isSuccess)

        // Same user, service and session: no finger needed.
        let (reused, events) = try d.perform(.evaluate(scoped))
        #expect(reused.isSuccess, "\(reused.message)")
        #expect(!events.contains { $0.kind == .placeFinger })

        // Another service, another terminal, or no reuse asked: a finger is needed (none comes).
        for other in [
            Self.biometrics(service: "su", tty: "/dev/pts/1", reuse: 60, timeoutMs: 1500),
            Self.biometrics(service: "sudo", tty: "/dev/pts/2", reuse: 60, timeoutMs: 1500),
            Self.biometrics(service: "sudo", tty: "/dev/pts/1", reuse: 0, timeoutMs: 1500),
        ] {
            let (r, e) = try d.perform(.evaluate(other))
            #expect(!r.isSuccess, "reused across scope: \(other)")
            #expect(e.contains { $0.kind == .placeFinger })
        }

        // An administrator's lockout reset forgets the window.
        #expect(try d.perform(.lockoutReset(user: "alice")).0.isSuccess)
        let (afterReset, _) = try d.perform(.evaluate(scoped))
        #expect(!afterReset.isSuccess)
    }

    @Test func lockoutReset_byRoot_unlocksBiometrics() async throws {
        let d = try await DaemonHarness.withAlicesFinger()
        for _ in 1...5 { _ = try Self.miss(d) }
        let r = try d.ctl(["lockout", "reset", "--user", "alice"])
        #expect(r.status == 0, "\(r.err)")
        #expect(try Self.canEvaluate(d).isSuccess)
    }

    @Test func passcode_whenUserChangesIt_needsTheCurrentOne() async throws {
        let d = try DaemonHarness()
        // uid 65534 is "nobody": a passcode of its own, set by root, changed by itself.
        #expect(try d.perform(.passcodeSet(user: "nobody", passcode: "first one", oldPasscode: nil)).0.isSuccess)
        let wrong = try d.ctl(["passcode", "change"], asUser: "65534", stdin: "not it\nsecond one\n")
        #expect(wrong.status == 1, "\(wrong.err)")
        let right = try d.ctl(["passcode", "change"], asUser: "65534", stdin: "first one\nsecond one\n")
        #expect(right.status == 0, "\(right.err)")
    }
}

/// `/etc/localauthd.conf` (here `--config`) reaches the policy, and a bad one stops the start.
@Suite(.onOwnThreads, .timeLimit(.minutes(1)))
struct ConfigurationIntegrationTests {
    static func write(_ text: String) throws -> String {
        let path = "/tmp/la-config-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).conf"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func configuredFingerAttempts_lockAfterThatManyMisses() async throws {
        let path = try Self.write("finger-attempts = 2\n")
        defer { unlink(path) }
        let d = try DaemonHarness(extraArguments: ["--config", path])
        try await d.enroll(user: "alice", printID: "alice-1")
        #expect(try PolicyIntegrationTests.miss(d).resultCode == .authenticationFailed)
        #expect(try PolicyIntegrationTests.miss(d).resultCode == .biometryLockout)
    }

    @Test func badConfiguration_refusesToStartWithFileLineAndReason() throws {
        let path = try Self.write("finger-attempts = 3\npasscode-delays = soon\n")
        defer { unlink(path) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: DaemonHarness.binDirectory + "/localauthd")
        p.arguments = [
            "--socket", "/tmp/la-never-\(getpid())", "--state-dir", "/tmp/la-never-state-\(getpid())", "--config", path,
        ]
        let err = Pipe()
        p.standardError = err
        try p.run()
        p.waitUntilExit()
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(p.terminationStatus == 2)
        #expect(text.contains("\(path):2: passcode-delays: 'soon' is not a delay from 1s to 24h"), "\(text)")
    }

    @Test func checkConfig_reportsValidityWithoutStarting() throws {
        let good = try Self.write("finger-attempts = 3\nfuture-key = 1\n")
        let bad = try Self.write("finger-attempts = -3\n")
        defer {
            unlink(good)
            unlink(bad)
        }
        func check(_ path: String) throws -> (Int32, String) {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: DaemonHarness.binDirectory + "/localauthd")
            p.arguments = ["--check-config", "--config", path]
            let out = Pipe()
            p.standardOutput = out
            try p.run()
            p.waitUntilExit()
            return (
                p.terminationStatus, String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            )
        }
        let (goodStatus, goodOut) = try check(good)
        #expect(goodStatus == 0)
        #expect(goodOut.contains("unknown key 'future-key'"))
        #expect(goodOut.contains("valid"))
        let (badStatus, badOut) = try check(bad)
        #expect(badStatus == 1)
        #expect(badOut.contains("\(bad):1: finger-attempts"))
    }
}

/// A later finger needs proof of presence: an enrolled finger, or the passcode after a miss.
/// uid 65534 is the account "nobody"; the reader never closes, so every touch can be queued first.
@Suite(.onOwnThreads, .timeLimit(.minutes(1)))
struct EnrolmentProofIntegrationTests {
    static func nobodyWithOneFinger() async throws -> DaemonHarness {
        let d = try DaemonHarness(extraArguments: ["--linger-ms", "-1"])
        try await d.enroll(user: "nobody", printID: "nobody-1")
        #expect(try d.perform(.passcodeSet(user: "nobody", passcode: "first one", oldPasscode: nil)).0.isSuccess)
        return d
    }

    static func fingers(_ d: DaemonHarness) throws -> [String] {
        try d.perform(.list(user: "nobody")).0.fields.strings(.finger)
    }

    static func queueSecondFinger(_ d: DaemonHarness) throws {
        for _ in 0..<5 { try d.simulate("touch", "nobody-2") }
    }

    /// The proof of presence a second finger needs: the enrolled finger ("nobody-1", no passcode
    /// typed), or a wrong finger and then the correct passcode.
    @Test(arguments: [("nobody-1", ""), ("mallory", "first one\n")])
    func enroll_secondFinger_afterTheEnrolledFingerOrTheCorrectPasscode_succeeds(touch: String, typed: String)
        async throws
    {
        let d = try await Self.nobodyWithOneFinger()
        try d.simulate("touch", touch)
        try Self.queueSecondFinger(d)
        let r = try d.ctl(["enroll", "--finger", "left-thumb"], asUser: "65534", stdin: typed)
        #expect(r.status == 0, "\(r.err)")
        #expect(try Self.fingers(d) == ["right-index-finger", "left-thumb"])
    }

    @Test func enroll_secondFinger_afterWrongFingerAndWrongPasscode_isRefused() async throws {
        let d = try await Self.nobodyWithOneFinger()
        try d.simulate("touch", "mallory")
        let r = try d.ctl(["enroll", "--finger", "left-thumb"], asUser: "65534", stdin: "not it\n")
        #expect(r.status == 1, "\(r.err)")
        #expect(r.err.contains("Adding a finger needs an enrolled finger or the passcode first"))
        #expect(try Self.fingers(d) == ["right-index-finger"])
    }
}

/// One audit line per decision, with the fields an administrator searches for.
@Suite(.onOwnThreads, .timeLimit(.minutes(1)))
struct AuditIntegrationTests {
    @Test func audit_recordsDecisionsAndLockoutChanges() async throws {
        let d = try await DaemonHarness.withAlicesFinger()
        for _ in 1...5 { _ = try PolicyIntegrationTests.miss(d) }
        let log = d.daemonLog
        #expect(log.contains("audit op=enroll user=\"alice\" caller_uid=0"))
        #expect(log.contains("service=\"test\" policy=\"1\" result=authenticationFailed"))
        // English, with the identifier of the phrase each client rendered in its own language.
        #expect(
            log.contains(
                "result=authenticationFailed phrase=fingerNotRecognised message=\"Fingerprint not recognised\""))
        #expect(log.contains("audit op=lockout user=\"alice\" change=\"biometry locked\""))
        #expect(try d.perform(.lockoutReset(user: "alice")).0.isSuccess)
        #expect(d.daemonLog.contains("audit op=lockoutReset user=\"alice\""))
    }

    @Test func audit_whenUserNameCarriesANewline_cannotForgeALine() throws {
        let d = try DaemonHarness()
        _ = try d.ctl(["list", "--user", "x\naudit op=evaluate result=success"], asUser: "65534")
        #expect(!d.daemonLog.contains("\naudit op=evaluate result=success"))
        #expect(d.daemonLog.contains("\\x0aaudit op=evaluate"))
    }
}
