// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthProtocol
import LocalAuthTesting
import Testing

@testable import LocalAuthentication

/// The real `localauthd` on a temporary socket and state directory: with libfprint's virtual device
/// (`--virtual-reader`), or with no reader at all (this machine has none). Tests run as root, so an
/// `LAContext` in this process authenticates the account "root".
final class Daemon: @unchecked Sendable {
    static var binDirectory: String { DaemonHarness.binDirectory }

    /// The daemon process (LocalAuthTesting): its directory, socket, log, and the requests tests send.
    let harness: DaemonHarness
    var directory: String { harness.directory }
    var socketPath: String { harness.socketPath }

    init(virtualReader: Bool = true) throws {
        // A clean environment: no FP_VIRTUAL_* variable may give the reader-less daemon a device.
        // This process asks as root for root's account; it stands where a greeter's worker stands,
        // in an active local session on seat0 (python-dbusmock's logind; docs/security.md).
        harness = try DaemonHarness(seat: .greeter, virtualReader: virtualReader)
    }

    var log: String { harness.daemonLog }

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
        try harness.perform(request).0
    }

    /// Puts a finger with print id `printID` on the virtual reader; a scan that starts later takes it.
    func touch(_ printID: String) throws {
        try harness.simulate("touch", printID)
    }

    func setPasscode(_ passcode: String, user: String = "root") throws {
        let r = try perform(.passcodeSet(user: user, passcode: passcode, oldPasscode: nil))
        guard r.isSuccess else { throw HarnessError.setup("passcode set failed: \(r.message)") }
    }

    /// Enrols a finger with five touches, given once the daemon has prompted for it (as a person would).
    /// A daemon with a virtual reader on which root has enrolled the print `root-1`.
    static func withRootFinger() async throws -> Daemon {
        let d = try Daemon()
        try await d.enroll(printID: "root-1")
        return d
    }

    func enroll(user: String = "root", finger: FingerName = .rightIndex, printID: String) async throws {
        try await harness.enroll(user: user, finger: finger, printID: printID)
    }

    /// Runs `program` as `user` through `setpriv`, in a session of its own (no controlling terminal).
    func run(_ program: String, asUser user: String, stdin: String) throws -> (status: Int32, out: String) {
        try Self.run(
            "/usr/bin/setsid",
            [
                "--wait", "/usr/bin/setpriv", "--reuid=\(user)", "--regid=\(user)", "--clear-groups",
                Self.binDirectory + "/" + program,
            ],
            environment: ["LOCALAUTHD_SOCKET": socketPath, "PATH": "/usr/bin:/bin"], stdin: stdin)
    }

    /// Runs `executable` with `stdin` written to it (in this process's environment when
    /// `environment` is nil): its exit status, and its standard output and error together.
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, stdin: String
    ) throws -> (status: Int32, out: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        if let environment { p.environment = environment }
        let result = try p.runToEnd(stdin: stdin, mergingErrors: true)
        return (result.status, result.out)
    }
}

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

    /// A recorder that puts another finger ("mallory") on `d`'s reader each time it asks again.
    static func otherFingerEachTry(on d: Daemon, answers: [String?] = []) -> PromptRecorder {
        PromptRecorder(answers: answers) { message in
            if message.kind == .noMatch, message.text.contains("left") { _ = try? d.touch("mallory") }
        }
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
