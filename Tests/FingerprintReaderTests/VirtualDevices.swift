// SPDX-License-Identifier: Apache-2.0
// Test support: the one shared reader over libfprint's three virtual drivers, and their socket protocols.

import FingerprintReader
import Glibc
import LocalAuthProtocol
import LocalAuthTesting
import Synchronization

/// Socket paths for the virtual drivers, in a fresh temporary directory.
struct VirtualSockets: Sendable {
    let directory: String
    var device: String { directory + "/device" }
    var storage: String { directory + "/storage" }
    var image: String { directory + "/image" }

    /// Makes the directory.
    static func make() -> VirtualSockets {
        do {
            return VirtualSockets(directory: try TemporaryDirectory.make("fpreader"))
        } catch {
            preconditionFailure("\(error)")
        }
    }

    /// Points libfprint's virtual drivers at these sockets, and the others at nothing (an exit test's child inherits
    /// the parent's environment, and a driver binding the parent's path would steal the parent's socket). Must run
    /// before the process's one FpContext exists.
    func export(device: Bool = true, storage: Bool = true, image: Bool = true) {
        for (name, path, wanted) in [
            ("FP_VIRTUAL_DEVICE", self.device, device), ("FP_VIRTUAL_DEVICE_STORAGE", self.storage, storage),
            ("FP_VIRTUAL_IMAGE", self.image, image),
        ] {
            if wanted { setenv(name, path, 1) } else { unsetenv(name) }
        }
    }
}

/// The process's one reader (one libfprint context per process), created on first use with all three virtual drivers.
enum Shared {
    static let sockets: VirtualSockets = VirtualSockets.make()

    private static let instance = Task { () -> FingerprintReader in
        sockets.export()
        do {
            // Never closed by a linger timer: these tests send socket commands between operations,
            // and on a loaded machine (the integration tests block the same cooperative threads) more
            // than a linger can pass between two of them. Linger is LifecycleTests' own subject.
            return try await FingerprintReader(lingerMs: nil)
        } catch {
            fatalError("cannot create the shared FingerprintReader: \(error)")
        }
    }

    static func reader() async -> FingerprintReader { await instance.value }

    /// The present reader whose driver is `driver`.
    static func device(_ driver: String) async throws -> ReaderDeviceInfo {
        guard let info = await reader().devices().first(where: { $0.driver == driver }) else {
            throw TestFailure("no \(driver) among \(await reader().devices())")
        }
        return info
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Connects to a Unix socket, retrying while it is not there yet (the driver binds it at open), for at most `timeoutMs`.
func connectUnixSocket(_ path: String, timeoutMs: Int = 2000) throws -> Int32 {
    precondition(path.utf8.count < 108, "socket path too long: \(path)")
    var waitedMs = 0
    while true {
        if let fd = UnixSocket.connect(path) { return fd }
        let reason = errno
        // Bounded polling for the socket to appear: there is no event to await from outside the driver.
        guard waitedMs < timeoutMs, reason == ENOENT || reason == ECONNREFUSED else {
            throw TestFailure("connect \(path): errno \(reason)")
        }
        usleep(5000)
        waitedMs += 5
    }
}

/// Writes all of `bytes` to `fd`.
func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws {
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if written < 0 {
            if errno == EINTR { continue }
            throw TestFailure("write: errno \(errno)")
        }
        offset += written
    }
}

/// Sends one command to a virtual_device / virtual_device_storage socket as the driver expects: one command per
/// connection, no trailing newline, `shutdown(SHUT_WR)`, then read to EOF (EOF means the driver consumed it, so the
/// next command cannot overtake it). Returns what the driver answered (`LIST`).
@discardableResult
func sendCommand(_ command: String, to path: String) throws -> String {
    let fd = try connectUnixSocket(path)
    defer { close(fd) }
    try writeAll(fd, Array(command.utf8))
    shutdown(fd, Int32(SHUT_WR))
    var reply: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count < 0 {
            if errno == EINTR { continue }
            throw TestFailure("read: errno \(errno)")
        }
        if count == 0 { break }
        reply += buffer[0..<count]
    }
    return String(decoding: reply, as: UTF8.self)
}

/// The one persistent connection virtual_image reads frames from (a new connection would drop the previous one).
final class ImageConnection {
    private let fd: Int32

    init(path: String) throws { fd = try connectUnixSocket(path) }

    deinit { close(fd) }

    /// Sends one frame as stored in the fixtures: int32 width, int32 height (little-endian), then the pixels.
    func send(frame: [UInt8]) throws { try writeAll(fd, frame) }
}

/// Reads a fixture file whole.
func readFixture(_ path: String) throws -> [UInt8] {
    guard let file = fopen(path, "rb") else { throw TestFailure("cannot open \(path)") }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = buffer.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
        if count == 0 { break }
        bytes += buffer[0..<count]
    }
    return bytes
}

/// Records events from a callback on any thread and lets a test await a condition over them.
final class EventLog<Event: Sendable>: Sendable {
    private struct Waiter {
        let condition: @Sendable ([Event]) -> Bool
        let continuation: CheckedContinuation<Void, Never>
    }
    private struct State {
        var events: [Event] = []
        var waiters: [Waiter] = []
    }
    private let state = Mutex(State())

    var events: [Event] { state.withLock { $0.events } }

    /// Appends `event` and wakes the waiters whose condition now holds.
    @Sendable func record(_ event: Event) {
        let ready: [CheckedContinuation<Void, Never>] = state.withLock { state in
            state.events.append(event)
            let events = state.events
            var ready: [CheckedContinuation<Void, Never>] = []
            state.waiters.removeAll { waiter in
                guard waiter.condition(events) else { return false }
                ready.append(waiter.continuation)
                return true
            }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    /// Returns once `condition` holds for the events recorded so far.
    func wait(until condition: @escaping @Sendable ([Event]) -> Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let holds = state.withLock { state in
                if condition(state.events) { return true }
                state.waiters.append(Waiter(condition: condition, continuation: continuation))
                return false
            }
            if holds { continuation.resume() }
        }
    }
}

extension EventLog where Event == ReaderProgress {
    /// Waits until the reader has asked for a finger `count` times in total.
    func waitForFingerNeeded(count: Int = 1) async {
        await wait { events in events.filter { $0 == .fingerNeeded }.count >= count }
    }
}

/// Runs `body` in a task, catching its typed error, so a test can cancel it and look at how it ended.
func startTask<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) -> Task<Result<T, ReaderFailure>, Never> {
    Task {
        do {
            return .success(try await body())
        } catch let error as ReaderFailure {
            return .failure(error)
        } catch {
            return .failure(.other("not a ReaderFailure: \(error)"))
        }
    }
}

extension FingerprintReader {
    /// Starts a verify in a task of its own and returns once the reader has asked for a finger:
    /// the task, to await or cancel, and the verify's progress.
    func verifyUntilFingerNeeded(deviceID: String, print: [UInt8]) async -> (
        task: Task<Result<VerifyOutcome, ReaderFailure>, Never>, log: EventLog<ReaderProgress>
    ) {
        let verify = startVerify(deviceID: deviceID, print: print)
        await verify.log.waitForFingerNeeded()
        return verify
    }

    /// Starts a verify in a task of its own: the task, to await or cancel, and the verify's progress.
    func startVerify(deviceID: String, print: [UInt8]) -> (
        task: Task<Result<VerifyOutcome, ReaderFailure>, Never>, log: EventLog<ReaderProgress>
    ) {
        let log = EventLog<ReaderProgress>()
        return (startTask { try await self.verify(deviceID: deviceID, print: print, progress: log.record) }, log)
    }
}

/// Enrols `scanID` on a virtual_device-type reader by queuing one `SCAN` per stage before the enrol starts.
func enrollVirtual(_ reader: FingerprintReader, _ info: ReaderDeviceInfo, socket: String, scanID: String) async throws
    -> [UInt8]
{
    try await reader.ensureOpen(deviceID: info.id)
    for _ in 0..<info.enrollStages { try sendCommand("SCAN \(scanID)", to: socket) }
    return try await reader.enroll(deviceID: info.id, finger: 2, username: "tester", progress: { _ in })
}
