// SPDX-License-Identifier: Apache-2.0
import Foundation

/// `Tests/system/logind_mock.py`: a private system bus with dbusmock's logind, one command a line.
package final class MockLogind: @unchecked Sendable {
    package let directory: String
    package private(set) var address = ""
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var buffered: [UInt8] = []

    package static var script: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Tests/system/logind_mock.py").path
    }

    /// - Parameter greeter: every process starts out in session c1, a greeter's, active on seat0.
    package init(greeter: Bool = true) throws {
        directory = try TemporaryDirectory.make("la-bus")
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        // The mock removes the directory itself when its input closes: the shared greeter's instance
        // is never deinitialised, so its test process's exit is the only end it sees.
        process.arguments =
            [Self.script, directory, "--remove-directory", "--monitor"] + (greeter ? ["--greeter"] : [])
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
        TemporaryDirectory.remove(directory)
    }

    /// One command; returns its answer line, and throws unless it is `ok` (or a query's answer).
    @discardableResult
    package func send(_ command: String) throws -> String {
        try input.fileHandleForWriting.write(contentsOf: Data((command + "\n").utf8))
        let answer = try line(timeout: 30)  // a hang's bound: dbusmock answers in its own time
        guard answer == "ok" || answer.hasPrefix(command.split(separator: " ")[0] + " ") || answer == command else {
            throw HarnessError.setup("logind mock answered \(answer) to \(command)")
        }
        return answer
    }

    /// The bus's messages so far (`monitor.log`, dbus-monitor's profile lines): a mark for
    /// `visits(since:)`.
    package func messageCount() throws -> Int { try caughtUp().count }

    /// What clients asked logind since `mark`: each question (`member path`, e.g. `GetSessionByPID
    /// /org/freedesktop/login1`) and the round trips they waited for — a question sent before the
    /// answers to the ones before it came back goes in the same round trip.
    package func visits(since mark: Int) throws -> (questions: [String], roundTrips: Int) {
        var questions: [String] = []
        var roundTrips = 0
        var answered = true
        var callers: Set<Substring> = []
        for line in try caughtUp().dropFirst(mark) {
            let f = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard f.count >= 5 else { continue }
            if f[0] == "mc", f[4] == "org.freedesktop.login1", f.count >= 8 {
                if answered { roundTrips += 1 }
                answered = false
                callers.insert(f[3])
                questions.append("\(f[7]) \(f[5])")
            } else if f[0] == "mr" || f[0] == "err", callers.contains(f[4]) {
                answered = true
            }
        }
        return (questions, roundTrips)
    }

    /// The monitor's lines once it has written every message the bus routed before this call:
    /// dbus-monitor writes them in the bus's order, in its own time, so the mock asks the bus a
    /// question of its own (`sync`) and this waits for that question's line. (Before, a test slept
    /// 300 ms for the monitor to catch up.)
    private func caughtUp() throws -> [Substring] {
        let isSync = { (line: Substring) in line.hasPrefix("mc\t") && line.hasSuffix("\tGetId") }
        let before = monitorLines().filter(isSync).count
        try send("sync")
        // A bound on a hang only: the line comes as soon as dbus-monitor is scheduled.
        let deadline = Date().addingTimeInterval(30)
        while true {
            let lines = monitorLines()
            // Up to the sync's line: any after it may still be half written.
            if lines.filter(isSync).count > before, let last = lines.lastIndex(where: isSync) {
                return Array(lines[...last])
            }
            guard Date() < deadline else { throw HarnessError.setup("dbus-monitor never wrote the sync's GetId") }
            usleep(5000)
        }
    }

    private func monitorLines() -> [Substring] {
        let text = (try? String(contentsOfFile: directory + "/monitor.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n")
    }

    /// Waits until logind's inhibitors are exactly `expected` (`who:what:mode`).
    package func waitForInhibitors(_ expected: [String], log d: DaemonHarness) throws {
        let deadline = Date().addingTimeInterval(30)  // a hang's bound only
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
