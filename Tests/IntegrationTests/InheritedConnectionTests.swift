// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthProtocol
import LocalAuthTesting
import Testing

/// Issue 13, L4: a connection outlives the process that opened it (handed to a child by fork,
/// or passed over a socket). The daemon's remote check and reuse scope look the caller up by
/// the pid captured at connect, which then names nothing, or another process: biometrics are
/// refused to such a connection, with a message that says why.
@Suite(.onOwnThreads, .timeLimit(.minutes(2)))
struct InheritedConnectionTests {
    /// As uid 65534: connect and say HELLO; with `fork`, the parent exits and the child, once it
    /// has been reparented, asks for a finger on the inherited connection. Prints the event kinds
    /// and the RESULT's code and message.
    static let script = """
        import os, socket, struct, sys, time
        def frame(t, fields):
            body = struct.pack(">H", t) + b"".join(struct.pack(">HH", tag, len(v)) + v for tag, v in fields)
            return struct.pack(">I", len(body)) + body
        def q(n): return struct.pack(">q", n)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(sys.argv[1])
        s.sendall(frame(1, [(1, q(1)), (2, b"inherit")]))
        if sys.argv[2] == "fork":
            parent = os.getpid()
            if os.fork() != 0:
                os._exit(0)
            while os.getppid() == parent:
                time.sleep(0.01)
        s.sendall(frame(4, [(6, q(1)), (13, q(1500))]))
        out, kinds = b"", []
        while True:
            while len(out) < 4 or len(out) < 4 + struct.unpack(">I", out[:4])[0]:
                chunk = s.recv(4096)
                if not chunk:
                    print("closed", kinds, flush=True); sys.exit(0)
                out += chunk
            n = struct.unpack(">I", out[:4])[0]
            body, out = out[4:4 + n], out[4 + n:]
            (t,) = struct.unpack(">H", body[:2])
            fields, i = {}, 2
            while i < len(body):
                tag, size = struct.unpack(">HH", body[i:i + 4])
                fields[tag] = body[i + 4:i + 4 + size]
                i += 4 + size
            if t == 0x8002:
                kinds.append(struct.unpack(">q", fields[17])[0])
            elif t == 0x8003:
                code = struct.unpack(">q", fields[15])[0]
                print(code, kinds, fields[16].decode(), flush=True)
                sys.exit(0)
        """

    static func run(_ mode: String, on d: DaemonHarness) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        p.arguments = [
            "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script, d.socketPath, mode,
        ]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        // The forking parent exits at once; the child holds the pipe until it has its answer.
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// With the fork, biometricsNotAvailable at once and no prompt (before: prompted, then the
    /// timeout); without it, the same client is prompted, so the test tells the two apart.
    @Test(arguments: [
        (
            "fork", "\(ResultCode.biometryNotAvailable.rawValue) [] ",
            "the process that opened this connection has exited"
        ),
        ("direct", "\(ResultCode.systemCancel.rawValue) [\(EventKind.placeFinger.rawValue)]", "Timed out"),
    ])
    func evaluate_onAConnectionWhoseCreatorExited_refusesBiometricsWithoutAPrompt(
        mode: String, start: String, message: String
    ) async throws {
        let d = try DaemonHarness()
        try await d.enroll(user: "nobody", printID: "nobody-1")
        let line = try Self.run(mode, on: d)
        #expect(line.hasPrefix(start) && line.contains(message), "\(mode): \(line)")
    }
}
