// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthTesting
import Testing

/// The client's socket is closed exactly once. A failed HELLO closed it in `DaemonConnection.init` and
/// again in its `deinit`: the second close took whatever another thread of the process had opened
/// under the same number in between — in the tests, libfprint's virtual-device listener (103,334
/// "Error accepting connection: Bad file descriptor" lines in one run) and other threads' daemon
/// connections ("localauthd closed the connection" from a daemon that had closed nothing, the flake
/// of LARightTests that failed the project's CI on 2026-11-28); in an app, any file of its own.
@Suite(.onOwnThreads, .timeLimit(.minutes(1)))
struct ClientDescriptorTests {
    /// A server that closes each connection as soon as it is accepted (a daemon on its way out).
    final class ClosingServer: @unchecked Sendable {
        let directory: String
        let path: String
        private let listener: Int32

        init() throws {
            directory = try TemporaryDirectory.make("fd")
            path = directory + "/socket"
            guard let fd = UnixSocket.bind(path, type: Int32(SOCK_STREAM.rawValue)) else {
                throw HarnessError.setup("cannot listen on \(path): errno \(errno)")
            }
            listener = fd
            Thread.detachNewThread { [listener] in
                while true {
                    let client = accept(listener, nil, nil)
                    if client < 0 { return }  // the listener was shut down
                    close(client)
                }
            }
        }

        deinit {
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
            TemporaryDirectory.remove(directory)
        }
    }

    /// `localauthctl status` against it, traced: it says the daemon closed the connection, and no
    /// `close` of its fails with EBADF (the number closed a second time).
    @Test func connection_whenTheDaemonClosesAtHello_closesItsSocketOnce() throws {
        let server = try ClosingServer()
        let trace = server.directory + "/trace"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/strace")
        p.arguments = [
            "-f", "-qq", "--failed-only", "-e", "trace=close", "-o", trace,
            DaemonHarness.binDirectory + "/localauthctl",
            "status",
        ]
        p.environment = ["LOCALAUTHD_SOCKET": server.path, "PATH": "/usr/bin:/bin"]
        let result = try p.runToEnd(stdin: nil, mergingErrors: true)
        #expect(result.status != 0)
        #expect(result.out.contains("localauthd closed the connection"), "\(result.out)")
        let closes = try String(contentsOfFile: trace, encoding: .utf8)
        #expect(!closes.contains("EBADF"), "a descriptor closed twice:\n\(closes)")
    }
}
