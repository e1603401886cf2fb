// SPDX-License-Identifier: Apache-2.0
import LocalAuthClient
import LocalAuthProtocol

/// The everyday command lines, parsed by hand: `devices`, `list`, `status`, `verify` and `simulate`
/// with their options written out as separate words (`--user NAME`, each option at most once).
///
/// swift-argument-parser builds every command's description by reflection before it parses
/// anything: half of `localauthctl list`'s CPU time (docs/performance.md). Anything this does not
/// recognise exactly — `--help`, `--user=NAME`, a repeated or unknown option, a value that starts
/// with `-`, a `--timeout` out of range, completions, every other command — returns nil and goes
/// to swift-argument-parser, which then parses, explains and refuses as it always did. Both paths
/// make the same request (`FastPathTests`).
struct FastPath {
    var request: Request
    var socket: String?
    var quiet: Bool
    var timeoutMs: Int64 = 330_000
    var show: (RequestResult) -> Void = { _ in }

    func run() -> Never {
        ClientOptions.run(request, socket: socket, quiet: quiet, timeoutMs: timeoutMs, print: show)
    }

    static func parse(_ arguments: [String]) -> FastPath? {
        guard let command = arguments.first else { return nil }
        // Arrays, not Set or Dictionary: a hashed collection's first use makes the runtime look up
        // String's Hashable conformance by scanning every conformance record in the binary.
        var options: [(name: String, value: String)] = []
        var flags: [String] = []
        var positional: [String] = []
        let valued: [String]
        let switches: [String]
        switch command {
        case "devices": (valued, switches) = (["--socket"], ["--quiet"])
        case "list", "status": (valued, switches) = (["--socket", "--user"], ["--quiet"])
        case "verify": (valued, switches) = (["--socket", "--user", "--timeout"], ["--quiet", "--passcode"])
        case "simulate": (valued, switches) = (["--socket"], ["--quiet"])
        default: return nil
        }
        var i = 1
        while i < arguments.count {
            let word = arguments[i] == "-q" ? "--quiet" : arguments[i]
            if valued.contains(word) {
                guard i + 1 < arguments.count, !options.contains(where: { $0.name == word }) else { return nil }
                let value = arguments[i + 1]
                guard !value.isEmpty, !value.hasPrefix("-") else { return nil }
                options.append((word, value))
                i += 2
                continue
            }
            if switches.contains(word) {
                guard !flags.contains(word) else { return nil }
                flags.append(word)
            } else if word.hasPrefix("-") || word.isEmpty {
                return nil
            } else {
                positional.append(word)
            }
            i += 1
        }
        func option(_ name: String) -> String? { options.first { $0.name == name }?.value }
        let socket = option("--socket")
        let quiet = flags.contains("--quiet")
        let user = option("--user")
        switch command {
        case "devices":
            guard positional.isEmpty else { return nil }
            return FastPath(request: .devices, socket: socket, quiet: quiet, show: Devices.show)
        case "list":
            guard positional.isEmpty else { return nil }
            return FastPath(request: .list(user: user), socket: socket, quiet: quiet, show: List.show)
        case "status":
            guard positional.isEmpty else { return nil }
            return FastPath(
                request: .status(user: user ?? PeerName.current), socket: socket, quiet: quiet, show: Status.show)
        case "verify":
            guard positional.isEmpty else { return nil }
            var seconds: Int64 = 30
            if let raw = option("--timeout") {
                guard let n = Int64(raw), (1...300).contains(n) else { return nil }
                seconds = n
            }
            return FastPath(
                request: .evaluate(
                    Verify.options(passcode: flags.contains("--passcode"), user: user, seconds: seconds)),
                socket: socket, quiet: quiet)
        case "simulate":
            guard (1...2).contains(positional.count) else { return nil }
            return FastPath(
                request: .simulate(action: positional[0], argument: positional.count > 1 ? positional[1] : nil),
                socket: socket, quiet: quiet)
        default:
            return nil
        }
    }
}
