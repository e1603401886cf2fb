// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthProtocol
import LocalAuthTesting
import Testing

/// The real daemon against python-dbusmock's logind on a private system bus
/// (`Tests/system/logind_mock.py`): sleep and resume, the lid switch, remote sessions by pid.
@Suite(.onOwnThreads, .serialized, .timeLimit(.minutes(2)))
struct LogindTests {
    static func biometrics(reuse: Int64 = 0, timeoutMs: Int64 = 10_000) -> EvaluateOptions {
        EvaluateOptions(
            policy: .deviceOwnerAuthenticationWithBiometrics, user: "alice", service: "logind-test",
            reuseSeconds: reuse, tries: 1, timeoutMs: timeoutMs)
    }

    /// A mock logind and a daemon asking it, with alice's finger enrolled.
    static func aliceEnrolled(config: String? = nil) async throws -> (MockLogind, DaemonHarness) {
        let logind = try MockLogind()
        let d = try daemon(logind, config: config)
        try await d.enroll(user: "alice", printID: "alice-1")
        return (logind, d)
    }

    static func daemon(_ logind: MockLogind, config: String? = nil) throws -> DaemonHarness {
        var arguments: [String] = []
        if let config {
            let path = logind.directory + "/localauthd.conf"
            try config.write(toFile: path, atomically: true, encoding: .utf8)
            arguments = ["--config", path]
        }
        let d = try DaemonHarness(
            extraArguments: arguments, environment: ["DBUS_SYSTEM_BUS_ADDRESS": logind.address], seat: .given)
        d.companion = logind  // the bus outlives the daemon on it
        return d
    }

    @Test func sleep_whenLogindAnnouncesIt_suspendsTheReaderForgetsReuseWindowsAndLetsTheSystemSleep() async throws {
        let logind = try MockLogind()
        let d = try Self.daemon(logind)
        try logind.waitForInhibitors(["localauthd:sleep:delay"], log: d)
        try await d.enroll(user: "alice", printID: "alice-1")
        #expect(try d.perform(.evaluate(Self.biometrics(reuse: 60)), touching: "alice-1").0.isSuccess)
        let (reused, events) = try d.perform(.evaluate(Self.biometrics(reuse: 60)))
        #expect(reused.isSuccess && !events.contains { $0.kind == .placeFinger }, "\(reused.message)")

        try logind.send("sleep")
        try logind.waitForInhibitors([], log: d)  // released once the reader is suspended
        #expect(d.daemonLog.contains("system going to sleep: reuse windows cleared"), "\(d.daemonLog)")
        try logind.send("wake")
        try logind.waitForInhibitors(["localauthd:sleep:delay"], log: d)
        #expect(d.daemonLog.contains("system resumed: reader resumed"), "\(d.daemonLog)")

        // The window from before sleep is gone: a finger is asked for, and the resumed reader reads it.
        let c = try d.connect()
        try c.send(Request.evaluate(Self.biometrics(reuse: 60)).frame)
        guard case .event(let prompt) = try c.receive(deadline: DaemonConnection.now() + 30_000) else {
            Issue.record("the reuse window outlived sleep")
            return
        }
        #expect(prompt.kind == .placeFinger)
        try d.simulate("touch", "alice-1")
        let after = try c.receiveResult()
        #expect(after.isSuccess, "\(after.message)\n\(d.daemonLog)")
    }

    @Test func sleep_whenAnEvaluationWaitsForAFinger_cancelsItWithSystemCancel() async throws {
        let logind = try MockLogind()
        let d = try Self.daemon(logind)
        try logind.waitForInhibitors(["localauthd:sleep:delay"], log: d)
        try await d.enroll(user: "alice", printID: "alice-1")
        let (c, _) = try d.startEvaluation(user: "alice")
        try logind.send("sleep")
        let result = try c.receiveResult()
        #expect(result.resultCode == .systemCancel, "\(result.message)")
        try logind.waitForInhibitors([], log: d)
        try logind.send("wake")
        try logind.waitForInhibitors(["localauthd:sleep:delay"], log: d)
        #expect(try d.perform(.evaluate(Self.biometrics()), touching: "alice-1").0.isSuccess, "\(d.daemonLog)")
    }

    /// The reader's linger runs out while the system sleeps (1 ms here; 2 s by default, and a system
    /// may take longer than that to go to sleep, or resume before it ran out). Before: the reader closed
    /// while suspended stayed suspended in libfprint, the resume skipped it as closed, and every later
    /// request failed with "the fingerprint reader is busy" until the daemon restarted.
    @Test func sleep_longerThanTheReadersLinger_leavesTheReaderWorkingAfterResume() async throws {
        let logind = try MockLogind()
        let d = try DaemonHarness(
            extraArguments: ["--linger-ms", "1"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": logind.address],
            seat: .given)
        d.companion = logind
        try logind.waitForInhibitors(["localauthd:sleep:delay"], log: d)
        try await d.enroll(user: "alice", printID: "alice-1")
        // A prompt waits for a finger (a locked screen) as the lid closes: the reader is open.
        let (c, _) = try d.startEvaluation(user: "alice")
        try logind.send("sleep")
        #expect(try c.receiveResult().resultCode == .systemCancel)
        try logind.waitForInhibitors([], log: d)  // the reader is suspended
        usleep(300_000)  // the system sleeps, 300 times the linger
        try logind.send("wake")
        try logind.waitForInhibitors(["localauthd:sleep:delay"], log: d)
        let (r, _) = try d.perform(.evaluate(Self.biometrics()), touching: "alice-1")
        #expect(r.isSuccess, "\(r.message)\n\(d.daemonLog)")
        #expect(try d.perform(.evaluate(Self.biometrics()), touching: "alice-1").0.isSuccess, "\(d.daemonLog)")
    }

    @Test func lid_whenClosed_refusesTheBuiltInReaderAtOnceAndWhenOpenTheFingerWorks() async throws {
        let (logind, d) = try await Self.aliceEnrolled()
        try logind.send("lid closed")
        var elapsed: [Double] = []
        for _ in 0..<21 {
            let started = Date()
            let (r, events) = try d.perform(.evaluate(Self.biometrics()))
            elapsed.append(Date().timeIntervalSince(started) * 1000)
            #expect(r.resultCode == .biometryNotAvailable, "\(r.message)")
            #expect(r.message.contains("lid is closed"), "\(r.message)")
            #expect(events.isEmpty)
        }
        let median = elapsed.sorted()[elapsed.count / 2]
        print("lid closed → biometryNotAvailable, evaluate round trip: median \(median) ms of \(elapsed)")
        // At once: a scan would wait for the finger. The figure is printed; speed goals live in
        // make bench (a bound of 50 ms failed under load: 63 ms).
        #expect(median < 1000, "lid check took \(elapsed) ms")
        let can = try d.perform(.canEvaluate(policy: .deviceOwnerAuthenticationWithBiometrics, user: "alice")).0
        #expect(can.resultCode == .biometryNotAvailable, "\(can.message)")
        #expect(can.fields.bool(.sensorInaccessible) == true, "LAEnvironment's builtInSensorInaccessible")
        #expect(d.daemonLog.contains("result=biometryNotAvailable"), "\(d.daemonLog)")

        try logind.send("lid open")
        let open = try d.perform(.canEvaluate(policy: .deviceOwnerAuthenticationWithBiometrics, user: "alice")).0
        #expect(open.fields.bool(.sensorInaccessible) == nil)
        #expect(try d.perform(.evaluate(Self.biometrics()), touching: "alice-1").0.isSuccess, "\(d.daemonLog)")
    }

    @Test func lid_whenClosed_leavesAnExternalReaderUsable() async throws {
        let (logind, d) = try await Self.aliceEnrolled(config: "external-reader-drivers = virtual_device\n")
        try logind.send("lid closed")
        let (r, _) = try d.perform(.evaluate(Self.biometrics()), touching: "alice-1")
        #expect(r.isSuccess, "\(r.message)")
    }

    @Test func remoteSession_foundByPID_isRefusedWithoutTouchingTheReader() async throws {
        let logind = try MockLogind()
        try logind.send("session remote")
        let d = try Self.daemon(logind)
        let (r, events) = try d.perform(.evaluate(Self.biometrics()))
        #expect(r.resultCode == .biometryNotAvailable, "\(r.message)")
        #expect(r.message.contains("remote session"), "\(r.message)")
        #expect(events.isEmpty)
        // The virtual driver binds its socket when the reader is opened: it never was.
        #expect(access(d.stateDirectory + "/virtual-reader.socket", F_OK) != 0)
        #expect(d.daemonLog.contains("the request comes from a remote session"), "\(d.daemonLog)")

        try logind.send("session local")
        try await d.enroll(user: "alice", printID: "alice-1")
        #expect(try d.perform(.evaluate(Self.biometrics()), touching: "alice-1").0.isSuccess, "\(d.daemonLog)")
    }

    /// Issue 18: an evaluation asks logind each question once — the caller's session by pid, that
    /// session's properties, the lid — and all of them in the same visit. The properties are sent
    /// with the question on a guess (the path logind gave last time) that is never taken as an
    /// answer: when the session changes between requests, the next request sees it.
    @Test func evaluation_asksLogindEachQuestionOnce_andTakesNothingFromTheLastRequest() async throws {
        let (logind, d) = try await Self.aliceEnrolled()
        #expect(try d.perform(.evaluate(Self.biometrics()), touching: "alice-1").0.isSuccess, "\(d.daemonLog)")

        // GetSessionByPID answers 100 ms late: questions sent together are all on the bus by then,
        // however slowly the daemon's thread runs; one that waits for an answer comes after it.
        try logind.send("slow 100")
        let mark = try logind.messageCount()
        try d.simulate("touch", "alice-1")
        #expect(try d.perform(.evaluate(Self.biometrics())).0.isSuccess, "\(d.daemonLog)")
        let (asked, roundTrips) = try logind.visits(since: mark)
        #expect(
            asked.sorted() == [
                "Get /org/freedesktop/login1",  // LidClosed: the virtual reader counts as built in
                "GetAll /org/freedesktop/login1/session/c1",
                "GetSessionByPID /org/freedesktop/login1",
            ], "\(asked)")
        #expect(roundTrips == 1, "\(asked)")
        try logind.send("slow 0")

        // The guessed session turns remote: its properties are asked afresh and refuse the finger.
        try logind.send("session remote")
        let (remote, events) = try d.perform(.evaluate(Self.biometrics()))
        #expect(
            remote.resultCode == .biometryNotAvailable && remote.message.contains("remote session"), "\(remote.message)"
        )
        #expect(events.isEmpty)
        // The caller leaves every session: the guess's answer (a local greeter) is not used.
        try logind.send("session none")
        let (none, noEvents) = try d.perform(.evaluate(Self.biometrics()))
        #expect(none.resultCode == .biometryNotAvailable, "\(none.message)")
        #expect(noEvents.isEmpty)
        try logind.send("session local")
        #expect(try d.perform(.evaluate(Self.biometrics()), touching: "alice-1").0.isSuccess, "\(d.daemonLog)")
    }

    @Test func noInteraction_whenTheCallerCannotShowAPrompt_answersNotInteractiveAtOnce() async throws {
        let logind = try MockLogind()
        let d = try Self.daemon(logind)
        try await d.enroll(user: "alice", printID: "alice-1")
        var options = Self.biometrics()
        options.flags.insert(.interactionNotAllowed)
        let (r, events) = try d.perform(.evaluate(options))
        #expect(r.resultCode == .notInteractive, "\(r.message)")
        #expect(events.isEmpty)
    }
}

extension DaemonConnection {
    /// Reads past events to the request's RESULT.
    func receiveResult(timeoutMs: Int64 = 20_000) throws -> RequestResult {
        let deadline = DaemonConnection.now() + timeoutMs
        while true {
            if case .result(let r) = try receive(deadline: deadline) { return r }
        }
    }
}
