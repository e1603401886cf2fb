// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthProtocol
import LocalAuthTesting
import Synchronization
import Testing

/// Issue 29: a match's record (the touch's count and its reset, one record that only relaxes the
/// one on disk) is written before the match is told, and synced and renamed into place after it
/// (docs/reliability.md, ADR 0008). The real daemon (a debug build) with
/// `LOCALAUTHD_DEBUG_WRITE_STEP_FIFOS`: it stops after each step of each durable write until the
/// test lets it go, or kills it there.
@Suite(.onOwnThreads, .serialized, .timeLimit(.minutes(3)))
struct MatchRecordTests {
    /// Lets the daemon go on at every write step, except that from step `holdFrom` on it holds it
    /// there until `release()`, or forgets it once `abandon()`ed (the daemon was killed).
    final class StepMonitor: @unchecked Sendable {
        struct State {
            var steps = 0
            var holdFrom: Int?
            var holding = false
            var released = false
            var abandoned = false
            var ended = false
        }
        let state = Mutex(State())
        let directory: String

        init(directory: String) {
            self.directory = directory
            mkfifo(directory + "/stopped", 0o600)
            mkfifo(directory + "/go", 0o600)
            Thread.detachNewThread { self.loop() }
        }

        var steps: Int { state.withLock { $0.steps } }
        var holding: Bool { state.withLock { $0.holding } }

        func hold(fromStep step: Int) { state.withLock { $0.holdFrom = step } }

        func abandon() {
            state.withLock {
                $0.abandoned = true
                $0.holdFrom = nil
            }
        }

        /// Ends the monitor (it reads a "q" when it next waits on `stopped`).
        func end() {
            state.withLock {
                $0.ended = true
                $0.holdFrom = nil
            }
            for _ in 0..<20_000 {
                let fd = open(directory + "/stopped", O_WRONLY | O_NONBLOCK)
                if fd >= 0 {
                    _ = write(fd, "q", 1)
                    close(fd)
                    return
                }
                usleep(100)
            }
        }

        private func loop() {
            while true {
                let fd = open(directory + "/stopped", O_RDONLY)
                var byte: UInt8 = 0
                let n = read(fd, &byte, 1)
                close(fd)
                if n != 1 { continue }
                if byte == 0x71 { return }  // "q"
                let hold = state.withLock { s -> Bool in
                    s.steps += 1
                    s.abandoned = false
                    let hold = s.holdFrom.map { s.steps >= $0 } ?? false
                    s.holding = hold
                    return hold
                }
                if hold {
                    while state.withLock({ !$0.released && !$0.abandoned && !$0.ended }) { usleep(1000) }
                    let abandoned = state.withLock { s -> Bool in
                        s.holding = false
                        s.released = false
                        return s.abandoned
                    }
                    if abandoned { continue }  // killed there: nobody waits on `go`
                }
                while true {
                    let go = open(directory + "/go", O_WRONLY | O_NONBLOCK)
                    if go >= 0 {
                        _ = write(go, "g", 1)
                        close(go)
                        break
                    }
                    if state.withLock({ $0.ended || $0.abandoned }) { break }
                    usleep(100)
                }
            }
        }
    }

    static func failures(_ d: DaemonHarness, copy: String) -> Int? {
        TouchCountingTests.stored(d, copy: copy).map { Int($0.fingerFailures) }
    }

    /// Before issue 29's change the match waited for its record's fsync and rename: held at the
    /// step after the record was written (its fsync), the daemon told nothing. Now it is told
    /// there; what is on disk meanwhile is the previous record (two misses counted), and a kill
    /// -9 at that point keeps that record: the strict side, never a lower count.
    @Test func match_isToldBeforeItsRecordIsSynced_andAKillBeforeTheSyncKeepsThePreviousCount() async throws {
        let work = try TemporaryDirectory.make("la-match-record")
        defer { TemporaryDirectory.remove(work) }
        let monitor = StepMonitor(directory: work)
        defer { monitor.end() }
        let d = try DaemonHarness(
            extraArguments: ["--linger-ms", "-1"], environment: ["LOCALAUTHD_DEBUG_WRITE_STEP_FIFOS": work])
        defer { d.kill9() }
        try await d.enroll(user: "alice", printID: "alice-1")
        for _ in 1...2 {
            try d.simulate("touch", "mallory")
            let (miss, _) = try d.perform(.evaluate(TouchCountingTests.biometrics))
            #expect(!miss.isSuccess, "\(miss.message)")
        }
        #expect(Self.failures(d, copy: work + "/after-misses") == 2)

        // The matching touch: its record's first step (written) goes on, the second (its fsync) is held.
        monitor.hold(fromStep: monitor.steps + 2)
        try d.simulate("touch", "alice-1")
        let c = try d.connect()
        try c.send(Request.evaluate(TouchCountingTests.biometrics).frame)
        var told: RequestResult?
        let deadline = DaemonConnection.now() + 10_000
        while told == nil, DaemonConnection.now() < deadline {
            guard let message = try? c.receive(deadline: deadline) else { break }
            if case .result(let r) = message { told = r }
        }
        let result = try #require(told, "the match was not told while its record waited for its fsync")
        #expect(result.isSuccess, "\(result.message)")
        // The sync runs after the answer, in a task of its own: it reaches its step soon after.
        for _ in 0..<500 where !monitor.holding { usleep(10_000) }
        #expect(monitor.holding, "the daemon did not stop at the match's record (steps: \(monitor.steps))")

        // Held after the answer, before the sync and rename: the previous record is what is there.
        #expect(Self.failures(d, copy: work + "/held") == 2)
        monitor.abandon()
        d.kill9()
        try d.start()
        #expect(Self.failures(d, copy: work + "/after-kill") == 2)

        // Matched again, the record goes into place once the answer is out.
        try d.simulate("touch", "alice-1")
        let (r, _) = try d.perform(.evaluate(TouchCountingTests.biometrics))
        #expect(r.isSuccess, "\(r.message)")
        var failures: Int?
        for attempt in 0..<100 {
            failures = Self.failures(d, copy: work + "/after-match-\(attempt)")
            if failures == 0 { break }
            usleep(20_000)
        }
        #expect(failures == 0)
        // The temporary file the kill left was swept; none other is left.
        let left = try FileManager.default.contentsOfDirectory(atPath: d.stateDirectory + "/users/alice")
        #expect(!left.contains { $0.hasPrefix(".tmp-") }, "\(left)")
    }
}
