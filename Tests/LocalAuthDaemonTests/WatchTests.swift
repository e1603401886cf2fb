// SPDX-License-Identifier: Apache-2.0
// WATCH through the real socket door (`Server`) in process, over a daemon without a reader: the
// daemon's side of a slow watcher, with changes made faster than any real one could be.

import Foundation
import Glibc
import LocalAuthProtocol
import LocalAuthSocketDoor
import LocalAuthStore
import LocalAuthTesting
import Testing

@testable import LocalAuthDaemon

@Suite(.serialized, .timeLimit(.minutes(1)))
struct WatchTests {
    /// Reads what `fd` has within `ms` of silence.
    static func drain(_ fd: Int32, quietMs: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, quietMs) > 0 else { return bytes }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { return bytes }
            bytes += buffer[0..<n]
        }
    }

    /// Reads from `fd` until `count` frames came, or `withinMs` passed.
    static func receive(_ fd: Int32, frames count: Int, withinMs: Int64 = 10_000) throws -> [Frame] {
        var reader = FrameReader()
        var got: [Frame] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = ContinuousClock.now + .milliseconds(withinMs)
        while got.count < count && ContinuousClock.now < deadline {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 100) > 0 else { continue }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            reader.append(buffer[0..<n])
            while let frame = try reader.next() { got.append(frame) }
        }
        return got
    }

    /// A daemon without a reader over a store in `directory`, and the socket door serving it on
    /// `directory/socket`: the daemon, the server, the socket's path.
    static func serving(in directory: String) async throws -> (Daemon, Server, String) {
        let store = try EnrollmentStore(stateDirectory: directory + "/state")
        let audit = AuditLog(level: .critical, sink: .stderr)
        let daemon = Daemon(reader: nil, store: store, audit: audit)
        let socketPath = directory + "/socket"
        let server = try await Server(daemon: daemon, socketPath: socketPath, adoptedFD: nil, audit: audit)
        return (daemon, server, socketPath)
    }

    /// Runs `body` with the daemon and its socket door (`serving`) in a fresh directory and a
    /// client connected to it; then shuts the door, closes the client and removes the directory.
    static func withAClient(_ body: (Daemon, Server, Int32) async throws -> Void) async throws {
        let directory = try TemporaryDirectory.make("la-watch-test")
        defer { TemporaryDirectory.remove(directory) }
        let (daemon, server, socketPath) = try await serving(in: directory)
        let fd = try #require(UnixSocket.connect(socketPath))
        defer { close(fd) }
        try await body(daemon, server, fd)
        await server.shutdown()
    }

    static func send(_ fd: Int32, _ frames: Frame...) {
        let bytes = frames.flatMap { $0.encoded() }
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// 5000 changes, each given time to reach the event loop, while the watcher reads nothing: it
    /// then finds what the kernel's socket buffer held and one pending EVENT, not 5000, and a
    /// request on another connection was answered meanwhile. Without the write-only-when-writable
    /// rule NIO queued every EVENT for the client that never reads (memory without bound).
    @Test func watch_whoseClientDoesNotRead_getsOneFrameForManyChanges_andTheDaemonServesOthers() async throws {
        let directory = try TemporaryDirectory.make("la-watch-test")
        defer { TemporaryDirectory.remove(directory) }
        let (daemon, server, socketPath) = try await Self.serving(in: directory)
        let watchers = await daemon.parts.watchers

        let fd = try #require(UnixSocket.connect(socketPath))
        defer { close(fd) }
        Self.send(fd, Hello(client: "slow watcher").frame, Frame(.watch))
        let first = try Self.receive(fd, frames: 2)
        #expect(first.map(\.type) == [.welcome, .event], "\(first)")
        #expect(first.last?.int(.event) == EventKind.environmentChanged.rawValue)
        #expect(watchers.count == 1)

        let changes = 5000
        for _ in 0..<changes {
            watchers.everyoneMayHaveChanged()
            usleep(100)  // the event loop takes each wake-up on its own: nothing coalesces before it
        }
        // Another client meanwhile: answered.
        let other = try #require(UnixSocket.connect(socketPath))
        defer { close(other) }
        Self.send(other, Hello(client: "other").frame, Request.devices.frame)
        let answer = try Self.receive(other, frames: 2)
        #expect(answer.map(\.type) == [.welcome, .result], "\(answer)")

        let events = try frames(in: Self.drain(fd, quietMs: 2000)).filter { $0.type == .event }
        print("slow watcher: \(events.count) EVENTs for \(changes) changes")
        #expect(events.count >= 1, "the changes were never said")
        #expect(events.count < changes / 5, "every change was queued for a client that does not read")

        // Once it reads again it is told of the next change at once.
        watchers.everyoneMayHaveChanged()
        let next = try Self.receive(fd, frames: 1)
        #expect(next.map(\.type).contains(.event), "\(next)")
        await server.shutdown()
    }

    /// The idle stop (systemd's socket kept, the accepted connections served) does not wait for a
    /// watch: it would have held the stop, with the listening socket already closed, for as long as
    /// the watch's client lived (its connection can be accepted in the stop's window).
    @Test func stopAcceptingAndServeTheAccepted_doesNotWaitForAWatch() async throws {
        let directory = try TemporaryDirectory.make("la-watch-test")
        defer { TemporaryDirectory.remove(directory) }
        let (_, server, socketPath) = try await Self.serving(in: directory)
        let fd = try #require(UnixSocket.connect(socketPath))
        defer { close(fd) }
        Self.send(fd, Hello(client: "watcher").frame, Frame(.watch))
        #expect(try Self.receive(fd, frames: 2).map(\.type) == [.welcome, .event])
        let finished = Finished()
        let stopped = Task {
            await server.stopAcceptingAndServeTheAccepted()
            finished.set()
        }
        let deadline = ContinuousClock.now + .seconds(3)
        while !finished.value && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        let done = finished.value
        #expect(done, "the stop waited for the watch")
        // The watcher goes (its descriptor is closed once, by the defer: a second close here took
        // whatever another test had opened under the number meanwhile, a daemon connection of
        // LARightTests or libfprint's virtual-device listener).
        shutdown(fd, Int32(SHUT_RDWR))
        await stopped.value
        await server.shutdown()
    }

    /// A WATCH that names anything (a user: another account's environment) is refused with
    /// `invalidRequest`, watches nothing, and the connection takes requests as before.
    @Test func watch_withAField_isRefused_andTheConnectionServesOn() async throws {
        try await Self.withAClient { daemon, _, fd in
            let watchers = await daemon.parts.watchers
            var named = Frame(.watch)
            named.append(.user, string: "someone-else")
            Self.send(fd, Hello(client: "watcher").frame, named, Request.devices.frame)
            let got = try Self.receive(fd, frames: 3)
            #expect(got.map(\.type) == [.welcome, .result, .result], "\(got)")
            #expect(got.dropFirst().first?.int(.code) == ResultCode.invalidRequest.rawValue)
            #expect(got.last?.int(.code) == 0)
            #expect(watchers.count == 0)
        }
    }

    /// A watch's CANCEL ends it with a RESULT and the close; the daemon forgets the watcher.
    @Test func watch_whenCancelled_answersSuccessClosesAndForgetsTheWatcher() async throws {
        try await Self.withAClient { daemon, server, fd in
            let watchers = await daemon.parts.watchers
            Self.send(fd, Hello(client: "watcher").frame, Frame(.watch), Frame(.cancel))
            let got = try Self.receive(fd, frames: 3)
            #expect(got.map(\.type) == [.welcome, .event, .result], "\(got)")
            #expect(got.last?.int(.code) == 0)
            #expect(watchers.count == 0)
            #expect(server.openConnections == 0)
        }
    }

    final class Finished: @unchecked Sendable {
        private let lock = NSLock()
        private var done = false
        func set() { lock.withLock { done = true } }
        var value: Bool { lock.withLock { done } }
    }
}
