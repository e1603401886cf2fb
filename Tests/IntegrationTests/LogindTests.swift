// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthProtocol
import Testing

/// The real daemon against python-dbusmock's logind on a private system bus
/// (`tests/system/logind_mock.py`): sleep and resume, the lid switch, remote sessions by pid.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct LogindTests {
    static func biometrics(reuse: Int64 = 0, timeoutMs: Int64 = 10_000) -> EvaluateOptions {
        EvaluateOptions(
            policy: .deviceOwnerAuthenticationWithBiometrics, user: "alice", service: "logind-test",
            reuseSeconds: reuse, tries: 1, timeoutMs: timeoutMs)
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
        try d.simulate("touch", "alice-1")
        #expect(try d.perform(.evaluate(Self.biometrics(reuse: 60))).0.isSuccess)
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
        guard case .event(let prompt) = try c.receive(deadline: DaemonConnection.now() + 5000) else {
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
        try d.simulate("touch", "alice-1")
        #expect(try d.perform(.evaluate(Self.biometrics())).0.isSuccess, "\(d.daemonLog)")
    }

    @Test func lid_whenClosed_refusesTheBuiltInReaderAtOnceAndWhenOpenTheFingerWorks() async throws {
        let logind = try MockLogind()
        let d = try Self.daemon(logind)
        try await d.enroll(user: "alice", printID: "alice-1")
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
        #expect(median < 50, "lid check took \(elapsed) ms")
        let can = try d.perform(.canEvaluate(policy: .deviceOwnerAuthenticationWithBiometrics, user: "alice")).0
        #expect(can.resultCode == .biometryNotAvailable, "\(can.message)")
        #expect(can.fields.bool(.sensorInaccessible) == true, "LAEnvironment's builtInSensorInaccessible")
        #expect(d.daemonLog.contains("result=biometryNotAvailable"), "\(d.daemonLog)")

        try logind.send("lid open")
        let open = try d.perform(.canEvaluate(policy: .deviceOwnerAuthenticationWithBiometrics, user: "alice")).0
        #expect(open.fields.bool(.sensorInaccessible) == nil)
        try d.simulate("touch", "alice-1")
        #expect(try d.perform(.evaluate(Self.biometrics())).0.isSuccess, "\(d.daemonLog)")
    }

    @Test func lid_whenClosed_leavesAnExternalReaderUsable() async throws {
        let logind = try MockLogind()
        let d = try Self.daemon(logind, config: "external-reader-drivers = virtual_device\n")
        try await d.enroll(user: "alice", printID: "alice-1")
        try logind.send("lid closed")
        try d.simulate("touch", "alice-1")
        let (r, _) = try d.perform(.evaluate(Self.biometrics()))
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
        try d.simulate("touch", "alice-1")
        #expect(try d.perform(.evaluate(Self.biometrics())).0.isSuccess, "\(d.daemonLog)")
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

/// `tests/system/logind_mock.py`: a private system bus with dbusmock's logind, one command a line.
final class MockLogind: @unchecked Sendable {
    let directory: String
    private(set) var address = ""
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var buffered: [UInt8] = []

    static var script: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("tests/system/logind_mock.py").path
    }

    /// - Parameter greeter: every process starts out in session c1, a greeter's, active on seat0.
    init(greeter: Bool = true) throws {
        var template = Array("/tmp/la-bus-XXXXXX".utf8CString)
        guard let dir = mkdtemp(&template) else { throw HarnessError.setup("mkdtemp failed") }
        directory = String(cString: dir)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [Self.script, directory] + (greeter ? ["--greeter"] : [])
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        let first = try line(timeout: 30)
        guard first.hasPrefix("ready ") else { throw HarnessError.setup("logind mock: \(first)") }
        address = String(first.dropFirst("ready ".count))
    }

    deinit {
        try? input.fileHandleForWriting.write(contentsOf: Data("quit\n".utf8))
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// One command; returns its answer line, and throws unless it is `ok` (or a query's answer).
    @discardableResult
    func send(_ command: String) throws -> String {
        try input.fileHandleForWriting.write(contentsOf: Data((command + "\n").utf8))
        let answer = try line(timeout: 10)
        guard answer == "ok" || answer.hasPrefix(command.split(separator: " ")[0] + " ") || answer == command else {
            throw HarnessError.setup("logind mock answered \(answer) to \(command)")
        }
        return answer
    }

    /// Waits until logind's inhibitors are exactly `expected` (`who:what:mode`).
    func waitForInhibitors(_ expected: [String], log d: DaemonHarness) throws {
        let deadline = Date().addingTimeInterval(10)
        var last = ""
        while Date() < deadline {
            last = try send("inhibitors")
            let held = last.split(separator: " ").dropFirst().map(String.init)
            if held.sorted() == expected.sorted() { return }
            usleep(20_000)
        }
        throw HarnessError.setup("inhibitors stayed \(last), expected \(expected)\n\(d.daemonLog)")
    }

    private func line(timeout seconds: Double) throws -> String {
        let fd = output.fileHandleForReading.fileDescriptor
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            if let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let text = String(decoding: buffered[..<newline], as: UTF8.self)
                buffered.removeSubrange(...newline)
                return text
            }
            let left = Int32(max(0, deadline.timeIntervalSinceNow * 1000))
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard left > 0, poll(&pfd, 1, left) > 0 else { throw HarnessError.setup("logind mock did not answer") }
            var chunk = [UInt8](repeating: 0, count: 512)
            let n = read(fd, &chunk, chunk.count)
            guard n > 0 else { throw HarnessError.setup("logind mock exited") }
            buffered += chunk[..<n]
        }
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
