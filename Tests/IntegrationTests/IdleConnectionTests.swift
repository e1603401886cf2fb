// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthProtocol
import LocalAuthTesting
import Testing

/// A connection that runs no request is closed after the idle timeout (30 s by default;
/// `--connection-idle-ms` shortens it here) with ERROR timeout, however it dribbles bytes; a
/// request that runs longer than the timeout is not cut. docs/reliability.md, section 6.
@Suite(.onOwnThreads, .timeLimit(.minutes(1)))
struct IdleConnectionTests {
    static let idleMs: Int64 = 500

    @Test func connection_whenIdleAfterHello_isClosedWithTimeoutError() throws {
        let d = try DaemonHarness(extraArguments: ["--connection-idle-ms", "\(Self.idleMs)"])
        let c = try RawConnection(path: d.socketPath)
        let opened = DaemonConnection.now()
        try c.send(Hello(client: "idle").frame.encoded())
        let (bytes, closed) = c.readUntilClosed(deadline: opened + 20_000)
        let received = try frames(in: bytes)
        #expect(received.map(\.type) == [.welcome, .error])
        #expect(received.last?.int(.code) == ProtocolErrorCode.timeout.rawValue)
        #expect(closed - opened >= Self.idleMs, "closed after \(closed - opened) ms")
        let (devices, _) = try d.perform(.devices)
        #expect(devices.isSuccess)
    }

    /// One byte every 50 ms of a frame that would never end: the bytes do not keep it open.
    @Test func connection_whenPartialFrameDribbles_isClosedAtIdleTimeout() throws {
        let d = try DaemonHarness(extraArguments: ["--connection-idle-ms", "\(Self.idleMs)"])
        let c = try RawConnection(path: d.socketPath)
        let opened = DaemonConnection.now()
        let frame: [UInt8] = [0, 0, 0x0F, 0xA0] + [0, 1] + [UInt8](repeating: 0x41, count: 200)
        var sent = 0
        var closedAt: Int64?
        while closedAt == nil && DaemonConnection.now() < opened + 20_000 {
            if sent < frame.count, (try? c.send([frame[sent]])) != nil { sent += 1 }
            closedAt = c.closed(within: 50)
        }
        #expect(closedAt != nil, "still open after \(sent) bytes")
        if let closedAt {
            #expect(closedAt - opened >= Self.idleMs, "closed after \(closedAt - opened) ms")
            #expect(sent < frame.count)
        }
        let received = try frames(in: c.received)
        #expect(received.map(\.type) == [.error])
        #expect(received.first?.int(.code) == ProtocolErrorCode.timeout.rawValue)
    }

    /// The prompt waits three idle timeouts for the finger; the touch still gets its answer.
    @Test func connection_whileEvaluationWaitsForFinger_isNotClosedByIdleTimeout() async throws {
        let d = try DaemonHarness(extraArguments: ["--connection-idle-ms", "\(Self.idleMs)"])
        try await d.enroll(user: "alice", printID: "alice-1")
        let (c, prompt) = try d.startEvaluation(user: "alice")
        #expect(prompt.kind == .placeFinger)
        // Nothing must arrive while the request runs, idle timeout or not.
        let quiet = try? c.receive(deadline: DaemonConnection.now() + 3 * Self.idleMs)
        #expect(quiet == nil, "unexpected \(String(describing: quiet))")
        try d.simulate("touch", "alice-1")
        var result: RequestResult?
        while result == nil, let m = try? c.receive(deadline: DaemonConnection.now() + 10_000) {
            if case .result(let r) = m { result = r }
        }
        #expect(result?.isSuccess == true, "\(String(describing: result))")
    }
}

/// A bare Unix socket client: what a hostile or slow peer would do.
final class RawConnection {
    let fd: Int32
    private(set) var received: [UInt8] = []

    init(path: String) throws {
        guard let fd = UnixSocket.connect(path) else { throw HarnessError.setup("connect to \(path) failed") }
        self.fd = fd
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) throws {
        let n = bytes.withUnsafeBytes { Foundation.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard n == bytes.count else { throw HarnessError.setup("send failed") }
    }

    /// Reads what arrives within `ms`; the time of the close when the peer closed, else nil.
    func closed(within ms: Int32) -> Int64? {
        let until = DaemonConnection.now() + Int64(ms)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let left = until - DaemonConnection.now()
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard left > 0, poll(&pfd, 1, Int32(left)) > 0 else { return nil }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { return DaemonConnection.now() }
            received += buffer[0..<n]
        }
    }

    /// Everything the peer sends until it closes (or the deadline), and when that was.
    func readUntilClosed(deadline: Int64) -> ([UInt8], Int64) {
        while DaemonConnection.now() < deadline {
            if let at = closed(within: 100) { return (received, at) }
        }
        return (received, DaemonConnection.now())
    }
}
