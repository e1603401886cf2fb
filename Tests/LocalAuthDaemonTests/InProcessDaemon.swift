// SPDX-License-Identifier: Apache-2.0
// Test support: the real `Daemon` in this process, no socket, over libfprint's virtual_device and a
// temporary state directory. libfprint allows one context per process, so each test that uses it
// runs in a child process of its own (an exit test), as Tests/FingerprintReaderTests/LifecycleTests.swift does.

import FingerprintReader
import Foundation
import Glibc
import LocalAuthCore
import LocalAuthDaemon
import LocalAuthProtocol
import LocalAuthSocketDoor
import LocalAuthStore
import LocalAuthSystemd
import LocalAuthTesting
import Synchronization
import Testing

/// The daemon, its store and the callers a test speaks as. Requests go through `Daemon.handle`, the
/// entry every door uses; the virtual reader is driven through the daemon's own `simulate`.
struct InProcessDaemon {
    let daemon: Daemon
    let store: EnrollmentStore
    let directory: String
    let owner: DaemonReference

    /// The steps of every store write so far (temporary file written, synced, renamed, directory synced).
    var writeSteps: Int { owner.writeSteps.withLock { $0 } }

    /// The account the tests evaluate for (it need not exist: the daemon trusts the door's credentials).
    static let user = "lasplit-alice"
    static let root = PeerCredentials(pid: getpid(), uid: 0, gid: 0, userName: "root")
    /// The user's own process, as a door would describe it.
    static let owner = PeerCredentials(pid: getpid(), uid: 4711, gid: 4711, userName: user)
    /// The scan id of the user's enrolled finger; any other id is another finger.
    static let enrolledScan = "alice-finger"

    /// Starts libfprint (virtual_device only) and the daemon; the reader never closes on its own.
    /// Every reader counts as external, so a closed lid of the machine running the tests changes nothing.
    /// Every step of every store write checks that it runs on the daemon's actor (the child traps if
    /// not): requests never write concurrently, and the watchdog's ping waits for a hung write.
    static func start(_ configure: (inout DaemonConfiguration) -> Void = { _ in }) async throws -> InProcessDaemon {
        let directory = try TemporaryDirectory.make("la-daemon-test")
        let socket = directory + "/virtual-reader.socket"
        setenv("FP_VIRTUAL_DEVICE", socket, 1)
        unsetenv("FP_VIRTUAL_DEVICE_STORAGE")
        unsetenv("FP_VIRTUAL_IMAGE")
        let reader = try await FingerprintReader(lingerMs: nil)
        let owner = DaemonReference()
        let store = try EnrollmentStore.pausingAtWriteSteps(stateDirectory: directory + "/state", onNotice: nil) {
            // A match's record is synced and renamed beside the actor after its answer (ADR 0004).
            if !EnrollmentStore.isCommittingAfterAnswer {
                owner.daemon?.preconditionIsolated("a store write off the daemon's actor")
            }
            owner.writeSteps.withLock { $0 += 1 }
        }
        var configuration = DaemonConfiguration()
        configuration.externalReaderDrivers = ["virtual_device"]
        configure(&configuration)
        let daemon = Daemon(
            reader: reader, store: store, configuration: configuration, virtualReaderSocket: socket,
            audit: AuditLog(level: .info, sink: .stderr))
        owner.daemon = daemon
        return InProcessDaemon(daemon: daemon, store: store, directory: directory, owner: owner)
    }

    /// Starts `request` as `caller`; the test reads its events and sends client signals meanwhile.
    func start(_ request: Request, as caller: PeerCredentials = owner) -> RunningRequest {
        let (events, eventSink) = AsyncStream.makeStream(of: Event.self)
        let (signals, signalSink) = AsyncStream.makeStream(of: ClientSignal.self)
        let daemon = self.daemon
        // What the daemon leaves for after the answer waits, as the socket door makes it wait for the
        // RESULT's write, until the test says it is done (`daemon.finishAfterAnswer()`, `storedState()`)
        // or the next request begins: a test reads the store as the client knew it at the answer.
        // Started at once instead, it raced the test's own reading ("3 steps" for "1" in a loaded CI).
        let io = RequestIO(send: { eventSink.yield($0) }, signals: signals, whenAnswered: { _ in })
        let task = Task {
            // As the socket says it (LocalAuthSocketDoor's WireEncoding).
            let result = await daemon.handle(request, caller: caller, io: io).result
            eventSink.finish()
            return result
        }
        return RunningRequest(task: task, signals: signalSink, events: events.makeAsyncIterator())
    }

    /// Runs `request` as `caller` to its RESULT.
    func request(_ request: Request, as caller: PeerCredentials = owner) async -> RequestResult {
        await start(request, as: caller).task.value
    }

    /// `localauthctl simulate ACTION [ARGUMENT]` as root; the virtual driver has taken the command when it returns.
    func simulate(_ action: String, _ argument: String? = nil) async throws {
        let result = await request(.simulate(action: action, argument: argument), as: Self.root)
        try #require(result.isSuccess, "simulate \(action): \(result.message)")
    }

    /// Root enrols the user's right index finger: one touch per enrol stage, queued before the enrolment.
    func enrollTheUser() async throws {
        try await simulate("touch", Self.enrolledScan)  // opens the reader, so its stage count is known
        let devices = await request(.devices, as: Self.root)
        let stages = try DeviceInfo(field: try #require(devices.fields.allBytes(.device).first)).enrollStages
        for _ in 1..<stages { try await simulate("touch", Self.enrolledScan) }
        let result = await request(.enroll(user: Self.user, finger: .rightIndex), as: Self.root)
        try #require(result.isSuccess, "enrol: \(result.message)")
    }

    /// Ends the child process, its temporary directory removed.
    func finish() -> Never {
        try? FileManager.default.removeItem(atPath: directory)
        exit(0)
    }

    /// What the store holds for the user now, once the daemon has done what its last answer left
    /// for after it (a match's record is synced and renamed then, on the actor).
    func storedState() async throws -> UserAuthState? {
        await daemon.finishAfterAnswer()
        if case .ok(let state) = try store.loadState(user: Self.user) { return state }
        return nil
    }

    /// A biometrics-only evaluation for the user.
    static func fingerOnly(tries: Int64 = 1, timeoutMs: Int64 = 20_000) -> Request {
        .evaluate(
            EvaluateOptions(
                policy: .deviceOwnerAuthenticationWithBiometrics, user: user, service: "in-process-test", tries: tries,
                timeoutMs: timeoutMs))
    }

    /// A finger-or-passcode evaluation from a client that can ask for the passcode.
    static func fingerOrPasscode(tries: Int64 = 3) -> Request {
        .evaluate(
            EvaluateOptions(
                policy: .deviceOwnerAuthentication, user: user, service: "in-process-test", flags: [.passcodeCapable],
                tries: tries, timeoutMs: 20_000))
    }
}

/// The daemon, for the store's write hook, which exists before it.
final class DaemonReference: @unchecked Sendable {
    var daemon: Daemon?
    let writeSteps = Mutex(0)
}

/// A request in flight: its events in order, its client signals, its RESULT.
struct RunningRequest {
    let task: Task<RequestResult, Never>
    let signals: AsyncStream<ClientSignal>.Continuation
    var events: AsyncStream<Event>.AsyncIterator
    /// Every event read so far.
    private(set) var seen: [Event] = []

    init(
        task: Task<RequestResult, Never>, signals: AsyncStream<ClientSignal>.Continuation,
        events: AsyncStream<Event>.AsyncIterator
    ) {
        self.task = task
        self.signals = signals
        self.events = events
    }

    /// Reads events up to the next one of `kind`; nil when the request ended first.
    @discardableResult
    mutating func next(_ kind: EventKind) async -> Event? {
        while let event = await events.next() {
            seen.append(event)
            if event.kind == kind { return event }
        }
        return nil
    }

    /// The RESULT, after reading every remaining event.
    mutating func result() async -> RequestResult {
        while let event = await events.next() { seen.append(event) }
        return await task.value
    }
}

/// In an exit test's child: records an issue and says on stderr what failed (the parent's report
/// shows a child's issue without its comment; `reportChildErrors` prints the line).
func check(_ condition: Bool, _ what: @autoclosure () -> String, sourceLocation: SourceLocation = #_sourceLocation) {
    guard !condition else { return }
    let line = "check failed: \(what())"
    _ = (line + "\n").withCString { write(STDERR_FILENO, $0, strlen($0)) }
    Issue.record(Comment(rawValue: line), sourceLocation: sourceLocation)
}

/// Shows what a failed child wrote to stderr: its failed checks, audit lines and libfprint's warnings.
func reportChildErrors(_ result: ExitTest.Result?) {
    guard let result else { return }
    let text = String(decoding: result.standardErrorContent, as: UTF8.self)
    guard result.exitStatus != .exitCode(0) || text.contains("check failed: ") else { return }
    print(text)
}
