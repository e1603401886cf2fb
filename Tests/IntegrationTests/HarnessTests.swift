// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthTesting
import Testing

/// The harness itself: a test that restarts the daemon (a kill, a stop and start) gets the same
/// daemon back, arguments included.
@Suite(.onOwnThreads, .timeLimit(.minutes(2)))
struct HarnessTests {
    static func commandLine(_ d: DaemonHarness) throws -> [String] {
        let pid = try #require(d.process?.processIdentifier)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))
        return bytes.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Before: `start()` after a stop started the daemon without the arguments the harness was made
    /// with (here its configuration file), so a restart tested another daemon than the first start.
    @Test func restart_keepsTheDaemonsArguments_andExplicitOnesReplaceThem() throws {
        let conf = try TemporaryDirectory.make("la-conf")
        defer { TemporaryDirectory.remove(conf) }
        try "harness-test-key = 1\n".write(toFile: conf + "/localauthd.conf", atomically: true, encoding: .utf8)
        let d = try DaemonHarness(extraArguments: ["--config", conf + "/localauthd.conf"], virtualReader: false)
        #expect(d.daemonLog.contains("unknown key 'harness-test-key' ignored"), "\(d.daemonLog)")

        d.stop()
        try d.start()
        #expect(try Self.commandLine(d).suffix(2) == ["--config", conf + "/localauthd.conf"])
        #expect(d.daemonLog.contains("unknown key 'harness-test-key' ignored"), "the restart: \(d.daemonLog)")

        d.kill9()
        try d.start(extraArguments: [])
        #expect(!(try Self.commandLine(d)).contains("--config"))
        d.stop()
        try d.start()
        #expect(!(try Self.commandLine(d)).contains("--config"), "the arguments given last are kept")
    }
}
