// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthProtocol
import Testing

@testable import LocalAuthentication

/// The real `localauthd` on a temporary socket and state directory: with libfprint's virtual device
/// (`--virtual-reader`), or with no reader at all (this machine has none). Tests run as root, so an
/// `LAContext` in this process authenticates the account "root".
final class Daemon: @unchecked Sendable {
    static var binDirectory: String {
        if let dir = ProcessInfo.processInfo.environment["LOCALAUTH_BIN"] { return dir }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug").path
    }

    let directory: String
    let socketPath: String
    private let process: Process
    private let logPath: String

    init(virtualReader: Bool = true) throws {
        var template = Array("/tmp/la-lib-XXXXXX".utf8CString)  // a socket path has at most 107 bytes
        guard let dir = mkdtemp(&template) else { throw DaemonError.setup("mkdtemp failed") }
        directory = String(cString: dir)
        chmod(directory, 0o755)  // the unprivileged vault must reach the socket
        socketPath = directory + "/socket"
        logPath = directory + "/daemon.log"
        process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binDirectory + "/localauthd")
        process.arguments =
            ["--socket", socketPath, "--state-dir", directory + "/state"] + (virtualReader ? ["--virtual-reader"] : [])
        // A clean environment: no FP_VIRTUAL_* variable may give the reader-less daemon a device.
        // This process asks as root for root's account; it stands where a greeter's worker stands,
        // in an active local session on seat0 (python-dbusmock's logind; docs/security.md).
        process.environment = ["PATH": "/usr/bin:/bin", "DBUS_SYSTEM_BUS_ADDRESS": try Self.seat.get()]
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = FileHandle(forWritingAtPath: logPath)!
        process.standardError = log
        process.standardOutput = log
        try process.run()
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            if (try? DaemonConnection(socketPath: socketPath, clientName: "test", timeoutMs: 1000)) != nil { return }
            guard process.isRunning else { break }
            usleep(10_000)  // polling for the socket to appear: there is no event to wait for
        }
        throw DaemonError.setup("localauthd did not start: \(log)")
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// `tests/system/logind_mock.py --greeter`, one for every daemon of this test process; it lives
    /// as long as the process (it stops when its standard input closes).
    static let seat: Result<String, Error> = Result {
        let mock = Process()
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        var template = Array("/tmp/la-seat-XXXXXX".utf8CString)
        guard let dir = mkdtemp(&template) else { throw DaemonError.setup("mkdtemp failed") }
        mock.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        mock.arguments = [
            root.appendingPathComponent("tests/system/logind_mock.py").path, String(cString: dir), "--greeter",
        ]
        let input = Pipe()
        let output = Pipe()
        mock.standardInput = input
        mock.standardOutput = output
        mock.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try mock.run()
        keepAlive = (mock, input)
        var line: [UInt8] = []
        let fd = output.fileHandleForReading.fileDescriptor
        var byte: UInt8 = 0
        while read(fd, &byte, 1) == 1, byte != UInt8(ascii: "\n") { line.append(byte) }
        let text = String(decoding: line, as: UTF8.self)
        guard text.hasPrefix("ready ") else { throw DaemonError.setup("logind mock: \(text)") }
        return String(text.dropFirst("ready ".count))
    }
    nonisolated(unsafe) private static var keepAlive: (Process, Pipe)?

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A context of this process, talking to this daemon, with no prompt unless the test gives one.
    func context(prompt: LALinuxPrompt? = nil, timeoutMs: Int64 = 10_000) -> LAContext {
        let context = LAContext()
        context.socketPath = socketPath
        context.linuxPrompt = prompt
        context.requestTimeoutMs = timeoutMs
        return context
    }

    /// One management request, as root.
    @discardableResult
    func perform(_ request: Request) throws -> RequestResult {
        let c = try DaemonConnection(socketPath: socketPath, clientName: "test")
        return try c.perform(request, timeoutMs: 60_000)
    }

    /// Puts a finger with print id `printID` on the virtual reader; a scan that starts later takes it.
    func touch(_ printID: String) throws {
        let r = try perform(.simulate(action: "touch", argument: printID))
        guard r.isSuccess else { throw DaemonError.setup("touch failed: \(r.message)") }
    }

    func setPasscode(_ passcode: String, user: String = "root") throws {
        let r = try perform(.passcodeSet(user: user, passcode: passcode, oldPasscode: nil))
        guard r.isSuccess else { throw DaemonError.setup("passcode set failed: \(r.message)") }
    }

    /// Enrols a finger with five touches, given once the daemon has prompted for it (as a person would).
    /// The blocking client runs on a thread of its own: the cooperative pool has only two.
    func enroll(user: String = "root", finger: FingerName = .rightIndex, printID: String) async throws {
        let socket = socketPath
        let (prompts, prompted) = AsyncStream.makeStream(of: Void.self)
        let outcome = Task {
            try await withCheckedThrowingContinuation { (done: CheckedContinuation<RequestResult, Error>) in
                Thread.detachNewThread {
                    defer { prompted.finish() }
                    do {
                        let c = try DaemonConnection(socketPath: socket, clientName: "enroll")
                        let r = try c.perform(.enroll(user: user, finger: finger), timeoutMs: 60_000) {
                            if $0.kind == .placeFinger { prompted.yield() }
                            return nil
                        }
                        done.resume(returning: r)
                    } catch {
                        done.resume(throwing: error)
                    }
                }
            }
        }
        var waiting = prompts.makeAsyncIterator()
        if await waiting.next() != nil {
            for _ in 0..<5 { try touch(printID) }
        }
        let result = try await outcome.value
        guard result.isSuccess else { throw DaemonError.setup("enrolment failed: \(result.message)\n\(log)") }
    }

    /// Runs `program` as `user` through `setpriv`, in a session of its own (no controlling terminal).
    func run(_ program: String, asUser user: String, stdin: String) throws -> (status: Int32, out: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/setsid")
        p.arguments = [
            "--wait", "/usr/bin/setpriv", "--reuid=\(user)", "--regid=\(user)", "--clear-groups",
            Self.binDirectory + "/" + program,
        ]
        p.environment = ["LOCALAUTHD_SOCKET": socketPath, "PATH": "/usr/bin:/bin"]
        let out = Pipe()
        let input = Pipe()
        p.standardOutput = out
        p.standardError = out
        p.standardInput = input
        try p.run()
        input.fileHandleForWriting.write(Data(stdin.utf8))
        try input.fileHandleForWriting.close()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: o, as: UTF8.self))
    }
}

enum DaemonError: Error { case setup(String) }

/// Collects what a supplied Linux prompt was shown and asked, and answers passcode questions in turn.
final class PromptRecorder: @unchecked Sendable {
    private let lock = NSLock()
    private var answers: [String?]
    private(set) var messages: [LALinuxPromptMessage] = []
    private(set) var questions: [LALinuxPasscodeRequest] = []
    private let onMessage: @Sendable (LALinuxPromptMessage) -> Void

    init(answers: [String?] = [], onMessage: @escaping @Sendable (LALinuxPromptMessage) -> Void = { _ in }) {
        self.answers = answers
        self.onMessage = onMessage
    }

    var prompt: LALinuxPrompt {
        LALinuxPrompt(
            show: { message in
                self.lock.withLock { self.messages.append(message) }
                self.onMessage(message)
            },
            passcode: { question in
                self.lock.withLock {
                    self.questions.append(question)
                    return self.answers.isEmpty ? nil : self.answers.removeFirst()
                }
            })
    }

    var shown: [LALinuxPromptMessage] { lock.withLock { messages } }
    var asked: [LALinuxPasscodeRequest] { lock.withLock { questions } }
}

/// The `LAError` an evaluation threw, or nil when it succeeded.
func evaluationError(
    _ context: LAContext, _ policy: LAPolicy = .deviceOwnerAuthenticationWithBiometrics,
    reason: String = "Run the tests"
) async -> LAError? {
    do {
        let ok = try await context.evaluatePolicy(policy, localizedReason: reason)
        #expect(ok)
        return nil
    } catch let error as LAError {
        return error
    } catch {
        Issue.record("not an LAError: \(error)")
        return nil
    }
}
