// SPDX-License-Identifier: Apache-2.0
import LocalAuthProtocol
import LocalAuthSystemd
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A daemon that cannot start on systemd's socket — a configuration it refuses, a state directory
/// or key it cannot use — does not exit. Exiting, systemd would start it again at once; five
/// failures in a row make the socket give up and remove its file, and every client then reads only
/// "cannot reach localauthd". Instead it says READY, answers every request with the reason, and
/// leaves after `idleExitSeconds` without a connection, so that the first request after the
/// administrator's fix starts a daemon afresh (docs/reliability.md, "A daemon that cannot start").
///
/// One connection at a time, each given `readDeadlineMs` to send its HELLO and its request: a
/// client that sends nothing, or garbage, delays the next by at most that and is closed.
public enum StartFailure {
    public static var idleExitSeconds: Int {
        #if DEBUG
            // Tests see the idle exit without waiting half a minute.
            if let text = getenv("LOCALAUTHD_DEBUG_START_FAILURE_IDLE_SECONDS"), let n = Int(String(cString: text)) {
                return n
            }
        #endif
        return 30
    }
    static let readDeadlineMs = 2000

    /// What every request is answered with: LAContext's requests fail as Apple's API does with no
    /// usable biometry (`biometryNotAvailable`), management requests with `internalError`.
    static func result(for type: MessageType?, reason: String) -> RequestResult {
        let phrase = Phrase.said(
            "localauthd cannot start: %s (journalctl -u localauthd says more)", .verbatim(reason))
        switch type {
        case .canEvaluate?, .evaluate?, .rightUse?: return RequestResult(.biometryNotAvailable, phrase)
        default: return RequestResult(.internalError, phrase)
        }
    }

    /// Answers connections on `listening` until `stopped` is set or no connection came for
    /// `idleExitSeconds`; returns true in the latter case. Pings systemd's watchdog while it waits.
    public static func answerEveryRequest(on listening: Int32, reason: String, stopped: borrowing Atomic<Bool>) -> Bool
    {
        let watchdog = Notify.watchdogInterval() != nil
        // Never blocks in accept: a client that left between poll and accept costs nothing.
        _ = fcntl(listening, F_SETFL, fcntl(listening, F_GETFL) | O_NONBLOCK)
        let idleExitSeconds = Double(idleExitSeconds)
        var idleSince = monotonicSeconds()
        while !stopped.load(ordering: .relaxed) {
            var pfd = pollfd(fd: listening, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, 500)
            if watchdog { Notify.send("WATCHDOG=1") }
            if ready <= 0 {
                if monotonicSeconds() - idleSince >= idleExitSeconds { return true }
                continue
            }
            let fd = accept(listening, nil, nil)
            guard fd >= 0 else { continue }
            answer(fd, reason: reason)
            close(fd)
            idleSince = monotonicSeconds()
        }
        return false
    }

    /// HELLO → WELCOME, the request → the RESULT carrying `reason`; anything else ends it.
    static func answer(_ fd: Int32, reason: String) {
        let deadline = monotonicSeconds() + Double(readDeadlineMs) / 1000
        var reader = FrameReader()
        var helloSeen = false
        while let frame = nextFrame(fd, &reader, deadline: deadline) {
            if !helloSeen {
                guard frame.type == .hello else { return }
                helloSeen = true
                reply(fd, .welcome(version: Wire.version, server: "localauthd 0.1"))
                continue
            }
            reply(fd, .result(result(for: frame.type, reason: reason)))
            return
        }
    }

    static func nextFrame(_ fd: Int32, _ reader: inout FrameReader, deadline: Double) -> Frame? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            do throws(ProtocolError) {
                if let frame = try reader.next() { return frame }
            } catch {
                return nil
            }
            let left = Int32((deadline - monotonicSeconds()) * 1000)
            guard left > 0 else { return nil }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, left) > 0 else { return nil }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { return nil }
            reader.append(buffer[0..<n])
        }
    }

    static func reply(_ fd: Int32, _ message: ServerMessage) {
        let bytes = message.encodedForWire()
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
