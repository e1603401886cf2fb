// SPDX-License-Identifier: Apache-2.0
import LocalAuthClient
import LocalAuthProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// The keys' open reuse windows (`--reuse`): key name → when it closes (monotonic ms). While one is
/// open the daemon holds an authorization of the key for this process; when it closes (its own
/// timer, or a signature that finds it closed) the agent sends RIGHT_USE deauthorize.
final class ReuseWindows: @unchecked Sendable {
    private let closes = Locked([String: Int64]())

    func isOpen(_ name: String) -> Bool {
        let now = DaemonConnection.now()
        return closes.with { ($0[name] ?? 0) > now }
    }

    func open(_ name: String, seconds: Int64, agent: SSHAgent, identifier: String) {
        let closesAt = DaemonConnection.now() + seconds * 1000
        closes.with { $0[name] = closesAt }
        _ = detachThread { [self] in
            let wait = closesAt - DaemonConnection.now()
            if wait > 0 { usleep(UInt32(min(wait, 300_000)) * 1000) }
            // A later finger opened a new window: that one's timer closes it.
            guard closes.with({ $0[name] == closesAt }) else { return }
            close(name, agent: agent, identifier: identifier)
        }
    }

    func close(_ name: String, agent: SSHAgent, identifier: String) {
        closes.with { $0[name] = nil }
        guard
            let connection = try? DaemonConnection(
                socketPath: agent.daemonSocket ?? DaemonConnection.defaultSocketPath,
                // English: a program's name
                clientName: "localauthctl ssh-agent"),
            let result = try? connection.perform(
                .rightUse(RightUseOptions(identifier: identifier, operation: .deauthorize)), timeoutMs: 10_000),
            result.isSuccess
        else {
            // English: the agent's log
            agentLog("key \(name): the reuse window closed, but the daemon could not be told")
            return
        }
        // English: the agent's log
        agentLog("key \(name): the reuse window closed")
    }
}
