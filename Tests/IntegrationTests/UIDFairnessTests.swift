// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthTesting
import Testing

/// Issue 18: one uid floods the daemon with status requests on every connection it may hold;
/// another uid's requests are still answered at once, not queued behind the flood, and the
/// flooder's connection over its limit is refused with `tooManyConnections`. The daemon counts
/// peers by `SO_PEERCRED`: the two uids are real processes (forked and `setresuid` by the script
/// below), and neither needs a passwd entry for `status`. Outcomes and order, never milliseconds.
@Suite(.onOwnThreads, .timeLimit(.minutes(1)))
struct UIDFairnessTests {
    /// uid 65534 holds 32 connections, each sending STATUS back to back (32 requests always in
    /// flight, hundreds in all), and is refused a 33rd. uid 65533 then asks STATUS five times: each
    /// is answered with success while the flood goes on, with at most a few of the flooder's answers
    /// in between (the gate lets a uid run 4 requests at once and start 100 a second; the rest of
    /// its flood waits in the gate, not in front of others at the daemon). Without the gate
    /// (`RequestGate.enter` letting every uid through) the other uid's request waited behind the
    /// flooder's 32: this test failed in three runs out of three.
    @Test func flood_byOneUID_leavesAnotherUIDsRequestsAnsweredAtOnce_andItsExcessRefused() throws {
        let d = try DaemonHarness()
        let run = Process()
        run.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        run.arguments = ["-c", Self.script, d.socketPath, "65534", "65533"]
        let (status, text, errors) = try run.runToEnd(stdin: nil)
        #expect(status == 0, "\(text)\(errors)\n\(d.daemonLog.suffix(2000))")
        let lines = text.split(separator: "\n").map(String.init)
        print("uid fairness: \(lines.joined(separator: " | "))")
        #expect(lines.contains("flooder welcomed 32 refused 1 code 6"), "\(text)")
        let other = lines.filter { $0.hasPrefix("other ") }
        #expect(other.count == 5, "\(text)")
        for line in other {
            #expect(line.contains(" result 0 "), "the other uid's status was not answered with success: \(line)")
        }
        // How many of the flooder's answers came between the other uid's request and its answer.
        let between = other.compactMap { line in line.split(separator: " ").last.flatMap { Int($0) } }.sorted()
        // With the gate 0 in each (a loaded machine may see a few: the flooder's 4 running and its
        // paced 100 a second); with the gate removed, medians 31, 32 and 35 in three runs.
        #expect(between.count == 5 && between[2] <= 12, "the other uid waited behind the flood: \(between)")
        let flooder = lines.first { $0.hasPrefix("flooder answered ") }
        #expect(flooder != nil && !(flooder!.hasSuffix(" 0")), "the flood got no answers: \(text)")
        #expect(lines.contains("flooder failures 0"), "\(text)")
        let (devices, _) = try d.perform(.devices)
        #expect(devices.isSuccess)
    }

    /// Forks the flooder and the other uid (each `setresuid` for good), shares the flooder's
    /// answer count through shared memory, prints one line per outcome.
    static let script = """
        import mmap, os, select, socket, struct, sys, time
        sys.path.insert(0, "\(Self.lawire)")
        import lawire
        path, flooder_uid, other_uid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
        shared = mmap.mmap(-1, 16)  # answers to the flooder; the stop flag
        def answers(): return struct.unpack_from("q", shared, 0)[0]
        def become(uid):
            os.setgroups([]); os.setresgid(uid, uid, uid); os.setresuid(uid, uid, uid)
        def hello(s):
            s.sendall(lawire.encode(lawire.HELLO, version=1, peerName="fairness"))
            return lawire.read_frame(s)
        status = lawire.encode(lawire.MESSAGES["STATUS"])
        r, w = os.pipe()
        flooder = os.fork()
        if flooder == 0:
            os.close(r)
            become(flooder_uid)
            conns, welcomed, refused, code, failures = [], 0, 0, None, 0
            for i in range(33):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(10)
                s.connect(path)
                try:
                    t, fields = hello(s)
                except (BrokenPipeError, ConnectionResetError):
                    t, fields = lawire.read_frame(s)
                if t == lawire.WELCOME:
                    welcomed += 1
                    conns.append(s)
                elif t == lawire.ERROR:
                    refused += 1
                    code = fields.get("code")
            os.write(w, b"flooder welcomed %d refused %d code %s\\n" % (welcomed, refused, str(code).encode()))
            for s in conns:
                s.sendall(status)
            while struct.unpack_from("q", shared, 8)[0] == 0:
                ready, _, _ = select.select(conns, [], [], 0.2)
                for s in ready:
                    t, fields = lawire.read_frame(s)
                    if t != lawire.RESULT or fields.get("code") != 0:
                        failures += 1
                    struct.pack_into("q", shared, 0, answers() + 1)
                    s.sendall(status)
            os.write(w, b"flooder answered %d\\nflooder failures %d\\n" % (answers(), failures))
            os._exit(0)
        deadline = time.monotonic() + 30
        while answers() < 120 and time.monotonic() < deadline:
            time.sleep(0.01)  # past the flooder's burst allowance: its pace is the gate's now
        other = os.fork()
        if other == 0:
            os.close(r)
            become(other_uid)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(10)
            s.connect(path)
            t, _ = hello(s)
            lines = b"" if t == lawire.WELCOME else b"other not welcomed\\n"
            for i in range(5):
                before = answers()
                s.sendall(status)
                t, fields = lawire.read_frame(s)
                after = answers()
                lines += b"other %d type %d result %s flooder-answers-between %d\\n" % (
                    i, t, str(fields.get("code")).encode(), after - before)
            os.write(w, lines)
            os._exit(0)
        os.close(w)
        os.waitpid(other, 0)
        struct.pack_into("q", shared, 8, 1)
        os.waitpid(flooder, 0)
        out = b""
        while True:
            chunk = os.read(r, 4096)
            if not chunk: break
            out += chunk
        sys.stdout.write(out.decode())
        """

    /// pam/tests/lawire.py: the protocol in Python, read from the vocabulary fixture.
    static let lawire = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("pam/tests").path
}
