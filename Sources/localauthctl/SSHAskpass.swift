// SPDX-License-Identifier: Apache-2.0

#if canImport(Glibc)
    import Glibc
#endif

/// The localauth passcode for a `biometry-or-passcode` key, asked through `$SSH_ASKPASS` — the
/// program OpenSSH itself runs to ask a person something when it has no terminal — only when the
/// daemon asks for it (`passcodeNeeded`: the fingers are locked out, or no reader can be used),
/// never offered in place of a finger (docs/adr/0011-ssh-agent.md). The daemon checks it, counts
/// it and locks it out as every passcode; the agent only carries it.
enum SSHAskpass {
    /// `$SSH_ASKPASS` when set to an absolute path of a program this account may run.
    static var program: String? {
        guard let value = getenv("SSH_ASKPASS"), value.pointee == UInt8(ascii: "/") else { return nil }
        let path = String(cString: value)
        return access(path, X_OK) == 0 ? path : nil
    }

    /// What the person typed (the program's first line of output), nil when there is no askpass,
    /// the person cancelled (a non-zero exit) or did not answer within `timeoutMs` (then it is killed).
    static func passcode(prompt: String, timeoutMs: Int64) -> String? {
        guard let program else { return nil }
        // Hidden entry: SSH_ASKPASS_PROMPT (OpenSSH's "confirm" / "none") is left out.
        var environment: [UnsafeMutablePointer<CChar>?] = []
        var e = environ
        while let entry = e.pointee {
            if strncmp(entry, "SSH_ASKPASS_PROMPT=", 19) != 0 { environment.append(entry) }
            e += 1
        }
        environment.append(nil)
        guard let child = ChildProcess.start(program, [prompt], environment: environment) else { return nil }
        defer { Glibc.close(child.output) }
        var output = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 256)
        let deadline = monotonicMs() + timeoutMs
        var timedOut = false
        while output.count < 1024 {
            let left = deadline - monotonicMs()
            guard left > 0 else {
                timedOut = true
                break
            }
            var p = pollfd(fd: child.output, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, Int32(min(left, 60_000)))
            if ready == 0 || (ready < 0 && errno == EINTR) { continue }
            guard ready > 0 else { break }
            let n = read(child.output, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            output += buffer[0..<n]
        }
        for i in buffer.indices { buffer[i] = 0 }
        if timedOut { kill(child.pid, SIGKILL) }
        var status: Int32 = 0
        while waitpid(child.pid, &status, 0) < 0 && errno == EINTR {}
        defer { for i in output.indices { output[i] = 0 } }
        guard !timedOut, status == 0 else { return nil }
        let line = output.prefix { $0 != UInt8(ascii: "\n") && $0 != UInt8(ascii: "\r") }
        return String(decoding: line, as: UTF8.self)
    }

    private static func monotonicMs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}
