// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthProtocol
import LocalAuthTesting
import Testing

/// Issue 13, H3: a client that floods PASSCODE frames into one request. Before, every frame was
/// queued and hashed (1 M frames: 370 MB and a core busy for hours, after the client had left).
/// Now one PASSCODE is taken per `passcodeNeeded`, the rest refused and not kept; hashing keeps a
/// person's pace (one a second per user); CANCEL overtakes everything.
@Suite(.onOwnThreads, .serialized, .timeLimit(.minutes(3)))
struct PasscodeFloodTests {
    static let frames = 200_000

    /// Resident memory (kB) and CPU time used so far (ms) of a process.
    static func usage(of pid: Int32) -> (rssKB: Int, cpuMs: Int) {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let rss =
            status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
            .flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") } ?? -1
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        let fields = stat[stat.index(after: stat.lastIndex(of: ")") ?? stat.startIndex)...].split(separator: " ")
        // utime and stime are the 12th and 13th fields after the command.
        let ticks = fields.count > 12 ? (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0) : -1
        return (rss, ticks * 1000 / Int(sysconf(Int32(_SC_CLK_TCK))))
    }

    @Test func passcodeFlood_keepsMemoryAndCPUBounded_cancelOvertakesIt_andItEndsWithTheClient() throws {
        let d = try DaemonHarness()
        #expect(try d.perform(.passcodeSet(user: "nobody", passcode: "the right one", oldPasscode: nil)).0.isSuccess)
        let pid = d.process!.processIdentifier
        guard let fd = UnixSocket.connect(d.socketPath) else { throw HarnessError.setup("connect failed") }
        var open = true
        defer { if open { close(fd) } }
        var limit = timeval(tv_sec: 10, tv_usec: 0)  // a daemon that stops reading fails the test, not hangs it
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        let request = Request.evaluate(
            EvaluateOptions(
                policy: .deviceOwnerAuthentication, user: "nobody", service: "flood", flags: [.passcodeCapable],
                tries: 1, timeoutMs: 120_000))
        try Self.write(fd, Hello(client: "flood").frame.encoded() + request.frame.encoded())
        var reader = FrameReader()
        var passcodeWrong = 0
        var result: RequestResult?
        func drain(waitMs: Int32) throws {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            while poll(&pfd, 1, waitMs) > 0 {
                var buffer = [UInt8](repeating: 0, count: 65_536)
                let n = recv(fd, &buffer, buffer.count, 0)
                if n <= 0 { return }
                reader.append(buffer[0..<n])
                while let frame = try reader.next() {
                    if frame.type == .event, frame.int(.event) == EventKind.passcodeWrong.rawValue {
                        passcodeWrong += 1
                    }
                    if frame.type == .result { result = try RequestResult(frame: frame) }
                }
                if waitMs > 0 { return }
            }
        }
        try drain(waitMs: 5000)  // WELCOME and passcodeNeeded
        let before = Self.usage(of: pid)

        var one = Frame(.passcode)
        one.append(.passcode, string: "a wrong guess")
        let chunk = Array(repeating: one.encoded(), count: 1000).flatMap { $0 }
        let started = Date()
        for _ in 0..<(Self.frames / 1000) {
            try Self.write(fd, chunk)
            try drain(waitMs: 0)
        }
        let floodSeconds = Date().timeIntervalSince(started)
        try drain(waitMs: 200)
        let during = Self.usage(of: pid)
        // CANCEL overtakes every frame still unread: the answer comes at once.
        let cancelled = Date()
        try Self.write(fd, Frame(.cancel).encoded())
        while result == nil && Date().timeIntervalSince(cancelled) < 10 { try drain(waitMs: 100) }
        let cancelSeconds = Date().timeIntervalSince(cancelled)
        let rssGrowthMB = Double(during.rssKB - before.rssKB) / 1024
        let cpuSeconds = Double(during.cpuMs - before.cpuMs) / 1000
        print(
            "PASSCODE flood: \(Self.frames) frames in \(floodSeconds) s; daemon RSS \(before.rssKB) → \(during.rssKB) kB "
                + "(+\(rssGrowthMB) MB), CPU \(cpuSeconds) s, \(passcodeWrong) passcodes checked, CANCEL answered after "
                + "\(cancelSeconds) s")
        #expect(result?.resultCode == .userCancel, "\(String(describing: result))")
        #expect(cancelSeconds < 2, "the cancel waited behind the flood for \(cancelSeconds) s")
        #expect(rssGrowthMB < 30, "the daemon kept the flood: +\(rssGrowthMB) MB")
        #expect(passcodeWrong <= Int(floodSeconds) + 3, "\(passcodeWrong) passcodes hashed in \(floodSeconds) s")

        // The client leaves: nothing of its flood is worked on after it.
        close(fd)
        open = false
        usleep(300_000)
        let left = Self.usage(of: pid)
        usleep(2_000_000)
        let after = Self.usage(of: pid)
        print("after the client left: \(Double(after.cpuMs - left.cpuMs) / 1000) s of CPU in 2 s")
        #expect(after.cpuMs - left.cpuMs < 300, "the daemon went on working for the flood")
    }

    static func write(_ fd: Int32, _ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw HarnessError.setup("send: errno \(errno)") }
            sent += n
        }
    }
}
