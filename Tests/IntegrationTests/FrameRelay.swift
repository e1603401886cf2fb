// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthProtocol

/// A client in Python, for tests that need one run as another uid (through `setpriv`): it sends
/// its standard input on a fresh connection to `argv[1]` and writes to its standard output what
/// came back, up to the first RESULT or ERROR frame (or the daemon closing). `argv[2]`, when not
/// empty: a file it creates once an EVENT arrives (the request is under way). `argv[3]`, when not
/// empty: the name it gives itself first (`prctl(PR_SET_NAME)`, as malware would).
enum FrameRelay {
    static let script = """
        import ctypes, socket, struct, sys
        mark, name = sys.argv[2], sys.argv[3]
        if name:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(15, ctypes.c_char_p(name.encode('latin-1')), 0, 0, 0) != 0:
                sys.exit('prctl failed')
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(60)
        s.connect(sys.argv[1])
        s.sendall(sys.stdin.buffer.read())
        out = b''
        def need(n):
            global out
            while len(out) < n:
                chunk = s.recv(4096)
                if not chunk:
                    return False
                out += chunk
            return True
        at = 0
        while need(at + 6):
            (length,) = struct.unpack('>I', out[at:at + 4])
            (kind,) = struct.unpack('>H', out[at + 4:at + 6])
            if not need(at + 4 + length):
                break
            at += 4 + length
            if kind == 0x8002 and mark:
                open(mark, 'w').close()
            if kind in (0x8003, 0x80FF):
                break
        sys.stdout.buffer.write(out[:at])
        """

    /// Runs `p` (a relay started with `script`), gives it HELLO as `client` and `request`, and waits
    /// for it: what it wrote back and what it said on standard error.
    static func run(_ p: Process, client: String, _ request: Request) throws -> (reply: [UInt8], said: String) {
        let input = Pipe()
        let output = Pipe()
        let errors = Pipe()
        p.standardInput = input
        p.standardOutput = output
        p.standardError = errors
        try p.run()
        input.fileHandleForWriting.write(Data(Hello(client: client).frame.encoded() + request.frame.encoded()))
        try input.fileHandleForWriting.close()
        let reply = Array(output.fileHandleForReading.readDataToEndOfFile())
        let said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return (reply, said)
    }
}
