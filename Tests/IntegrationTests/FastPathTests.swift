// SPDX-License-Identifier: Apache-2.0
import LocalAuthTesting
import Testing

/// `localauthctl`'s everyday command lines skip swift-argument-parser (`Sources/localauthctl/FastPath.swift`).
/// Each plain form is run beside a spelling only swift-argument-parser takes (`--socket=PATH`),
/// against the same real daemon: the same output, the same exit code. Every
/// other form must reach swift-argument-parser and get its help or its error.
@Suite(.onOwnThreads, .serialized, .timeLimit(.minutes(2)))
struct FastPathTests {
    /// Plain forms; each one's twin adds `--socket=PATH`, a spelling only swift-argument-parser takes.
    static let plainForms: [[String]] = [
        ["list", "--user", "alice"],
        ["list", "--user", "bob"],
        ["list", "-q", "--user", "alice"],
        ["status", "--user", "alice"],
        ["status", "--quiet", "--user", "alice"],
        ["status"],
        ["devices"],
        ["verify", "--user", "alice", "--timeout", "1"],
        ["verify", "--timeout", "1", "--passcode", "--user", "bob"],
        ["simulate", "finger-off"],
        ["simulate", "retry", "3"],
    ]

    @Test func plainForms_answerAsArgumentParserDoes() async throws {
        let d = try await DaemonHarness.withAlicesFinger()
        for plain in Self.plainForms {
            let a = try d.ctl(plain)
            let b = try d.ctl(plain + ["--socket=\(d.socketPath)"])
            #expect(a.status == b.status, "\(plain): \(a.status) vs \(b.status): \(a.err) / \(b.err)")
            #expect(a.out == b.out, "\(plain)")
            #expect(a.err == b.err, "\(plain)")
        }
    }

    @Test func listAndStatus_throughTheFastPath_printWhatTheDaemonHolds() async throws {
        let d = try await DaemonHarness.withAlicesFinger()
        let list = try d.ctl(["list", "--user", "alice"])
        #expect(list.status == 0)
        #expect(list.out.contains("right-index-finger"))
        let status = try d.ctl(["status", "--user", "alice", "--socket", d.socketPath])
        #expect(status.status == 0)
        #expect(status.out.contains("fingers enrolled: 1"))
        let quiet = try d.ctl(["list", "-q", "--user", "alice"])
        #expect(quiet.status == 0 && quiet.out.isEmpty)
    }

    /// Forms the fast path must not take: swift-argument-parser's help and its errors (exit 64).
    /// One daemon for all of them (a daemon per case was a load spike beside the timing tests).
    static let otherForms: [([String], Int32, String)] = [
        (["list", "--help"], 0, "USAGE"),
        (["list", "-h"], 0, "USAGE"),
        (["list", "--user"], 64, "Missing value"),
        (["list", "--user", "--quiet"], 64, "Missing value"),
        (["list", "--user", "a", "--user", "b", "--bogus"], 64, "Unknown option"),
        (["list", "extra"], 64, "Unexpected argument"),
        (["status", "--bogus"], 64, "Unknown option"),
        (["verify", "--timeout", "0"], 64, "--timeout takes 1 to 300 seconds"),
        (["verify", "--timeout", "x"], 64, "timeout"),
        (["simulate"], 64, "Missing expected argument"),
        (["simulate", "a", "b", "c"], 64, "Unexpected argument"),
        (["devices", "--user", "root"], 64, "Unknown option"),
    ]

    @Test func otherForms_getArgumentParsersHelpOrError() throws {
        let d = try DaemonHarness()
        for (arguments, status, text) in Self.otherForms {
            let r = try d.ctl(arguments)
            #expect(r.status == status, "\(arguments): \(r.out) \(r.err)")
            #expect((r.out + r.err).contains(text), "\(arguments): \(r.out) \(r.err)")
        }
    }
}
