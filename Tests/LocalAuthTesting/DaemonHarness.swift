// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthProtocol
import Testing

/// The real `localauthd` binary on a temporary socket and state directory, with libfprint's
/// virtual device (`--virtual-reader`), driven by the tests through the protocol and `localauthctl`.
package final class DaemonHarness: @unchecked Sendable {
    package static var binDirectory: String {
        if let dir = ProcessInfo.processInfo.environment["LOCALAUTH_BIN"] { return dir }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug").path
    }

    package let directory: String
    package let socketPath: String
    package let stateDirectory: String
    package private(set) var process: Process?
    package let stderrPath: String
    /// Lives as long as the daemon: e.g. the mock logind whose bus it uses.
    package var companion: AnyObject?

    /// Variables added to the daemon's clean environment, at every start.
    package let environment: [String: String]
    /// Whether the daemon runs with libfprint's virtual device (`--virtual-reader`).
    package let virtualReader: Bool
    /// The daemon's arguments after the harness's own, kept for every restart (`start()`).
    package private(set) var extraArguments: [String]
    /// A command the daemon is started through (its path and arguments come after), e.g. `unshare`
    /// with a script that mounts a small file system on the state directory first.
    package let launcher: [String]
    /// With `privateBootID`, the daemon runs in a private mount namespace where
    /// /proc/sys/kernel/random/boot_id is this file (`newBoot()` gives it a fresh id).
    package private(set) var bootIDFile: String?

    /// The logind a harness daemon sees. The test process asks as root (real uid 0) for accounts
    /// that are not its own, as a display manager's worker does: by default it stands in an active
    /// local greeter session on seat0, the one place where root may ask for whoever types their
    /// name (docs/security.md, "Who may be asked for a finger"). One mock serves every harness.
    package enum Seat {
        case greeter
        /// No system bus at all (an address nothing listens on), as in a container without logind.
        case noLogind
        /// The daemon's environment names the bus (a test's own `MockLogind`).
        case given
    }

    package static let sharedGreeter: Result<MockLogind, Error> = Result { try MockLogind(greeter: true) }

    /// `stateDirectory`: one the test prepared; by default a fresh one in the harness's directory.
    /// `directory`: one the test made (e.g. with a log file it must know before the start); by
    /// default a fresh one. `virtualReader`: false starts the daemon with no reader at all.
    package init(
        extraArguments: [String] = [], stateDirectory: String? = nil, environment: [String: String] = [:],
        launcher: [String] = [], seat: Seat = .greeter, directory: String? = nil, virtualReader: Bool = true,
        privateBootID: Bool = false
    ) throws {
        var environment = environment
        switch seat {
        case .greeter: environment["DBUS_SYSTEM_BUS_ADDRESS"] = try Self.sharedGreeter.get().address
        case .noLogind: environment["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=/nonexistent/localauth-no-bus"
        case .given: break
        }
        self.environment = environment
        self.extraArguments = extraArguments
        let directory = try directory ?? TemporaryDirectory.make("la")
        self.directory = directory
        self.virtualReader = virtualReader
        if privateBootID {
            // unshare execs the shell, which execs the daemon: the process is the daemon's pid.
            let file = directory + "/boot_id"
            bootIDFile = file
            self.launcher = [
                "/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                "mount --bind \"$0\" /proc/sys/kernel/random/boot_id && exec \"$@\"", file,
            ]
        } else {
            self.launcher = launcher
        }
        chmod(directory, 0o755)  // unprivileged test clients must reach the socket
        socketPath = directory + "/socket"
        self.stateDirectory = stateDirectory ?? directory + "/state"
        stderrPath = directory + "/daemon.log"
        if bootIDFile != nil { try newBoot() }
        try start(extraArguments: extraArguments)
    }

    /// A new boot, as the daemon sees it: the bound file gets a fresh id, written in place (a
    /// rename would leave the daemon's mount on the old file).
    package func newBoot() throws {
        guard let bootIDFile else { throw HarnessError.setup("no private boot id") }
        let fd = open(bootIDFile, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw HarnessError.setup("cannot write \(bootIDFile)") }
        defer { close(fd) }
        let text = Array((UUID().uuidString.lowercased() + "\n").utf8)
        guard write(fd, text, text.count) == text.count else { throw HarnessError.setup("short write") }
    }

    /// Starts the daemon (again). `extraArguments`: its arguments from now on; by default the ones
    /// it was last started with (the harness's `init`'s), so a restart is the same daemon.
    package func start(extraArguments: [String]? = nil) throws {
        recordIfCrashed()
        if let extraArguments { self.extraArguments = extraArguments }
        let p = Process()
        let daemon = Self.binDirectory + "/localauthd"
        // The daemon's own linger (2 s) unless the test gives `--linger-ms`: the reader closes and
        // opens again between requests as on a user's machine. A touch given before its request
        // waits for it all the same (the daemon keeps the virtual reader open until a scan took it).
        let arguments =
            ["--socket", socketPath, "--state-dir", stateDirectory] + (virtualReader ? ["--virtual-reader"] : [])
            + self.extraArguments
        p.executableURL = URL(fileURLWithPath: launcher.first ?? daemon)
        p.arguments = launcher.isEmpty ? arguments : Array(launcher.dropFirst()) + [daemon] + arguments
        // A clean environment: the test process may carry other FP_VIRTUAL_* variables.
        p.environment = ["PATH": "/usr/bin:/bin"].merging(environment) { $1 }
        // Emptied in place, not replaced: a test may have given the daemon this file's device and
        // inode (JOURNAL_STREAM).
        let fd = open(stderrPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw HarnessError.setup("cannot open \(stderrPath): errno \(errno)") }
        let log = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        p.standardError = log
        p.standardOutput = log
        unlink(socketPath)
        try p.run()
        process = p
        crashRecorded = false
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            if (try? DaemonConnection(socketPath: socketPath, clientName: "harness", timeoutMs: 1000)) != nil { return }
            guard p.isRunning else { break }
            usleep(10_000)
        }
        throw HarnessError.setup("localauthd did not start: \(daemonLog)")
    }

    package var daemonLog: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// SIGTERM and wait; returns the exit status.
    @discardableResult
    package func stop() -> Int32 {
        recordIfCrashed()
        guard let p = process, p.isRunning else { return process?.terminationStatus ?? -1 }
        p.terminate()
        // Bounded: a daemon that ignores SIGTERM fails the test instead of hanging the whole run.
        let deadline = Date().addingTimeInterval(15)
        while p.isRunning && Date() < deadline { usleep(10_000) }
        guard !p.isRunning else {
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
            Issue.record("localauthd did not exit within 15 s of SIGTERM:\n\(daemonLog)")
            return -1
        }
        recordIfCrashed()  // while it stopped
        return p.terminationStatus
    }

    /// Signals by which a daemon dies only of its own fault: a Swift trap (SIGILL on x86-64,
    /// SIGTRAP on arm64), an abort, a bad access. No test sends these.
    static let crashSignals: Set<Int32> = [SIGILL, SIGTRAP, SIGABRT, SIGSEGV, SIGBUS, SIGFPE]

    /// A daemon that died of a crash fails the test that ran it, with its log (its "Fatal error" line),
    /// whatever the test's own checks saw: a client only sees "closed the connection".
    private func recordIfCrashed() {
        guard let p = process, !p.isRunning, p.terminationReason == .uncaughtSignal,
            Self.crashSignals.contains(p.terminationStatus), !crashRecorded
        else { return }
        crashRecorded = true
        Issue.record(
            "localauthd (pid \(p.processIdentifier)) crashed with signal \(p.terminationStatus):\n\(daemonLog)")
    }
    private var crashRecorded = false

    package func kill9() {
        guard let p = process, p.isRunning else { return }
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
    }

    deinit {
        stop()
        // For hunting a flaky test: every daemon's log kept, named by its pid, in that directory.
        if let keep = ProcessInfo.processInfo.environment["LOCALAUTH_TEST_KEEP_LOGS"], let p = process {
            try? FileManager.default.copyItem(atPath: stderrPath, toPath: "\(keep)/daemon-\(p.processIdentifier).log")
        }
        TemporaryDirectory.remove(directory)
    }

    package func connect(_ name: String = "test") throws -> DaemonConnection {
        try DaemonConnection(socketPath: socketPath, clientName: name)
    }

    /// One request on a fresh connection, with its events.
    package func perform(_ request: Request, onEvent: @escaping (Event) -> EventReply? = { _ in nil }) throws -> (
        RequestResult, [Event]
    ) {
        let c = try connect()
        var events: [Event] = []
        let result = try c.perform(request, timeoutMs: 60_000) { e in
            events.append(e)
            return onEvent(e)
        }
        return (result, events)
    }

    /// One request on a fresh connection, answered by a touch of `printID` given once the daemon asks
    /// for the finger (its first placeFinger), as a person would. A touch given before the request
    /// waits too: the daemon keeps the virtual reader open until a scan has taken it. Before that, a
    /// loaded machine outran the reader's linger (2 s) between such a touch and the request's scan,
    /// which then waited for a finger until its timeout.
    package func perform(_ request: Request, touching printID: String) throws -> (RequestResult, [Event]) {
        var touched: Result<Void, Error>?
        let outcome = try perform(request) { [self] e in
            if e.kind == .placeFinger, touched == nil { touched = Result { try simulate("touch", printID) } }
            return nil
        }
        try touched?.get()
        return outcome
    }

    /// Sends a biometrics EVALUATE and returns once the daemon has prompted: the scan is waiting.
    package func startEvaluation(user: String) throws -> (DaemonConnection, Event) {
        let c = try connect()
        try c.send(
            Request.evaluate(EvaluateOptions(policy: .deviceOwnerAuthenticationWithBiometrics, user: user)).frame)
        // 30 s bounds a hang only: a prompt late on a loaded machine is still a prompt.
        guard case .event(let prompt) = try c.receive(deadline: DaemonConnection.now() + 30_000) else {
            throw HarnessError.setup("expected a prompt")
        }
        return (c, prompt)
    }

    /// `localauthctl simulate …` through the daemon, as root.
    package func simulate(_ action: String, _ argument: String? = nil) throws {
        let (r, _) = try perform(.simulate(action: action, argument: argument))
        guard r.isSuccess else { throw HarnessError.setup("simulate \(action) failed: \(r.message)") }
    }

    /// Enrols `finger` for `user` with five touches of print id `printID`, given once the daemon
    /// has prompted for the finger (as a person would), so no touch can reach a closed reader.
    /// The blocking client runs on a thread of its own: the cooperative pool has only two.
    @discardableResult
    package func enroll(user: String, finger: FingerName = .rightIndex, printID: String) async throws -> (
        RequestResult, [Event]
    ) {
        let socket = socketPath
        let (prompts, prompted) = AsyncStream.makeStream(of: Void.self)
        let outcome = Task {
            try await withCheckedThrowingContinuation {
                (done: CheckedContinuation<(RequestResult, [Event]), Error>) in
                Thread.detachNewThread {
                    defer { prompted.finish() }  // also when enrolment fails before any prompt
                    do {
                        let c = try DaemonConnection(socketPath: socket, clientName: "enroll")
                        var events: [Event] = []
                        let r = try c.perform(.enroll(user: user, finger: finger), timeoutMs: 60_000) {
                            events.append($0)
                            if $0.kind == .placeFinger { prompted.yield() }
                            return nil
                        }
                        done.resume(returning: (r, events))
                    } catch {
                        done.resume(throwing: error)
                    }
                }
            }
        }
        var waiting = prompts.makeAsyncIterator()
        if await waiting.next() != nil {
            for _ in 0..<5 { try simulate("touch", printID) }
        }
        let (result, events) = try await outcome.value
        guard result.isSuccess else {
            throw HarnessError.setup("enrolment of \(finger.rawValue) failed: \(result.message)\n\(daemonLog)")
        }
        return (result, events)
    }

    /// Runs `localauthctl` with this daemon's socket; `asUser` runs it through `setpriv` as that account;
    /// `setuidBy` runs it as a setuid-root program started by that uid runs (`su`, `sudo`): real uid
    /// `setuidBy`, effective uid 0. `environment` is added to the client's (e.g. LANG, LOCPATH).
    /// `program`: another executable file than the built `localauthctl` (a copy of it elsewhere: another
    /// program, as the daemon tells programs apart).
    package func ctl(
        _ arguments: [String], asUser: String? = nil, setuidBy: String? = nil, stdin: String? = nil,
        environment: [String: String] = [:], program: String? = nil
    ) throws -> (
        status: Int32, out: String, err: String
    ) {
        try ctlProcess(arguments, asUser: asUser, setuidBy: setuidBy, environment: environment, program: program)
            .runToEnd(stdin: stdin)
    }

    /// `localauthctl` as `ctl` runs it, started with its standard output on a pseudo-terminal (so
    /// each line shows as it is printed), returned once it has printed `marker` — by default the
    /// finger prompt, which comes once the daemon holds the reader for its request. `finish()` waits
    /// for it as `ctl` does.
    package func ctlStarted(
        _ arguments: [String], asUser: String? = nil, setuidBy: String? = nil, program: String? = nil,
        until marker: String = " on the reader"
    ) throws -> StartedCtl {
        let p = try ctlProcess(arguments, asUser: asUser, setuidBy: setuidBy, environment: [:], program: program)
        return try StartedCtl(p, until: marker)
    }

    private func ctlProcess(
        _ arguments: [String], asUser: String?, setuidBy: String?, environment: [String: String], program: String?
    ) throws -> Process {
        let p = Process()
        let ctl = program ?? Self.binDirectory + "/localauthctl"
        if let setuidBy {
            p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            p.arguments =
                ["--ruid=\(setuidBy)", "--euid=0", "--rgid=\(setuidBy)", "--egid=0", "--clear-groups", ctl] + arguments
        } else if let asUser {
            p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            p.arguments = ["--reuid=\(asUser)", "--regid=\(asUser)", "--clear-groups", ctl] + arguments
        } else {
            p.executableURL = URL(fileURLWithPath: ctl)
            p.arguments = arguments
        }
        p.environment = ["LOCALAUTHD_SOCKET": socketPath, "PATH": "/usr/bin:/bin"].merging(environment) { $1 }
        return p
    }

    /// Raw bytes on a fresh socket; returns what the daemon sent until it closed (or 30 s passed
    /// without a byte: a hang's bound, not a wait the daemon is expected to use).
    package func raw(_ bytes: [UInt8]) throws -> [UInt8] {
        guard let fd = UnixSocket.connect(socketPath) else { throw HarnessError.setup("connect failed") }
        defer { close(fd) }
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 30_000) > 0 else { break }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            reply += buffer[0..<n]
        }
        return reply
    }
}

/// A `localauthctl` started by `DaemonHarness.ctlStarted`, its standard output a pseudo-terminal.
package final class StartedCtl: @unchecked Sendable {
    private let process: Process
    private let terminal: PseudoTerminal
    private let errors = Pipe()
    /// What it printed up to the marker.
    package let printed: String

    init(_ p: Process, until marker: String) throws {
        process = p
        terminal = try PseudoTerminal()
        let side = FileHandle(fileDescriptor: terminal.secondary, closeOnDealloc: false)
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = side
        p.standardError = errors
        try p.run()
        terminal.closeSecondary()
        do {
            printed = try terminal.read(until: marker)
        } catch {
            if p.isRunning { p.terminate() }
            p.waitUntilExit()
            let said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw HarnessError.setup("\(error); it said on standard error: \(said)")
        }
    }

    /// Waits for it to exit: its status, all it printed, and its standard error.
    package func finish() throws -> (status: Int32, out: String, err: String) {
        let rest = try terminal.readToEnd()
        let said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, printed + rest, said)
    }
}

/// Frames in `bytes`, decoded.
package func frames(in bytes: [UInt8]) throws -> [Frame] {
    var reader = FrameReader()
    reader.append(bytes)
    var out: [Frame] = []
    while let f = try reader.next() { out.append(f) }
    return out
}
