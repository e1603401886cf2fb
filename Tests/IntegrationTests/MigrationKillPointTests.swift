// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthProtocol
import LocalAuthStore
import LocalAuthTesting
import Testing

/// The one-time sealing of a plain store (left by a version before sealing), through the real
/// daemon stopped at every write step of its start (the kill-point hook of docs/reliability.md,
/// armed during the store's opening): a copy of the state directory is taken at each point, which
/// is what a `kill -9` there would leave. Every copy must open with this machine's key and hold
/// every print, whole.
@Suite(.onOwnThreads, .timeLimit(.minutes(2)))
struct MigrationKillPointTests {
    static func plainPrint(_ finger: FingerName, seed: UInt8) -> StoredPrint {
        StoredPrint(
            finger: finger, deviceKey: "virtual_device-0", data: (0..<61).map { UInt8($0) &+ seed },
            enrolledAtMs: 1_700_000_000_000)
    }

    @Test func migration_whenKilledAtAnyWriteStep_losesNoPrint() async throws {
        let work = try TemporaryDirectory.make("la-mk")
        defer { TemporaryDirectory.remove(work) }
        mkfifo(work + "/stopped", 0o600)
        mkfifo(work + "/go", 0o600)
        mkdir(work + "/copies", 0o700)

        // The plain store an older version left: the harness's state directory, filled before it starts.
        let state = work + "/harness-state"
        let prints = [Self.plainPrint(.rightIndex, seed: 1), Self.plainPrint(.leftThumb, seed: 2)]
        do {
            let plain = try EnrollmentStore(stateDirectory: state)
            for p in prints { _ = try plain.addPrint(p, user: "alice") }
            _ = try plain.addPrint(Self.plainPrint(.rightThumb, seed: 3), user: "bob")
        }

        // The monitor: at each stop, copy the state directory, then let the daemon go on.
        let (done, finished) = AsyncStream.makeStream(of: Int.self)
        Thread.detachNewThread {
            var count = 0
            while true {
                let fd = open(work + "/stopped", O_RDONLY)
                var byte: UInt8 = 0
                _ = read(fd, &byte, 1)
                close(fd)
                if byte == UInt8(ascii: "q") { break }
                count += 1
                let copy = Process()
                copy.executableURL = URL(fileURLWithPath: "/bin/cp")
                copy.arguments = ["-a", state, "\(work)/copies/\(count)"]
                try? copy.run()
                copy.waitUntilExit()
                let go = open(work + "/go", O_WRONLY)
                _ = write(go, &byte, 1)
                close(go)
            }
            finished.yield(count)
            finished.finish()
        }

        let d = try DaemonHarness(
            stateDirectory: state,
            environment: ["LOCALAUTHD_DEBUG_WRITE_STEP_FIFOS": work, "LOCALAUTHD_DEBUG_WRITE_STEP_DURING_OPEN": "1"])
        // Started: the migration is over. Stop the monitor.
        let quit = open(work + "/stopped", O_WRONLY)
        var q = UInt8(ascii: "q")
        _ = write(quit, &q, 1)
        close(quit)
        var waiting = done.makeAsyncIterator()
        let stops = try #require(await waiting.next())
        #expect(stops >= 16, "the key, the sealing record (twice) and three prints: \(stops) stops")
        #expect(d.daemonLog.contains("sealed 3 print file(s)"), "\(d.daemonLog)")

        let sealing = SealingConfiguration(method: .keyFile, keyFile: state + "-key/sealing.key")
        for copy in 1...stops {
            let path = "\(work)/copies/\(copy)"
            let store = try EnrollmentStore(stateDirectory: path, sealing: sealing)
            #expect(try store.allPrints(user: "alice") == prints, "killed at stop \(copy)")
            #expect(try store.allPrints(user: "bob").count == 1, "killed at stop \(copy)")
        }
        // And the running daemon serves the migrated prints.
        try d.simulate("touch", "anything")
        let (list, _) = try d.perform(.list(user: "alice"))
        #expect(list.fields.strings(.finger) == ["right-index-finger", "left-thumb"])
    }
}
