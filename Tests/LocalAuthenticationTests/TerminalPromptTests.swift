// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthTesting
import Testing

/// The default Linux prompt, `LALinuxPrompt.terminal`: the vault runs on a pseudo-terminal that is its
/// controlling terminal, and the passcode is typed there.
@Suite(.timeLimit(.minutes(1)))
struct TerminalPromptTests {
    @Test func vault_onAControllingTerminal_readsThePasscodeWithoutEcho() throws {
        let d = try Daemon()
        try d.setPasscode("open sesame")  // no finger enrolled: the owner policy asks for the passcode
        try TerminalPromptButtonTests.withVault(d) { terminal in
            let question = try terminal.command("unlock", until: "Enter your passcode [Keep Locked]: ")
            #expect(question.contains("Unlock your vault"), "the reason reaches the terminal: \(question)")
            let answer = try terminal.command("open sesame", until: "Vault unlocked.")
            #expect(!answer.contains("open sesame"), "the passcode was echoed: \(answer)")
        }
    }
}

/// The terminal prompt's buttons: Esc is `localizedCancelTitle`, Enter the fallback once offered.
/// Before, neither could be pressed: the fallback event was ignored and nothing read the keys.
@Suite(.timeLimit(.minutes(1)))
struct TerminalPromptButtonTests {
    /// The vault (as root) on its own pseudo-terminal.
    static func vault(_ d: Daemon) throws -> (Process, PseudoTerminal) {
        let terminal = try PseudoTerminal()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/setsid")
        p.arguments = ["--ctty", "--wait", Daemon.binDirectory + "/vault"]
        p.environment = ["LOCALAUTHD_SOCKET": d.socketPath, "PATH": "/usr/bin:/bin"]
        let side = FileHandle(fileDescriptor: terminal.secondary, closeOnDealloc: false)
        p.standardInput = side
        p.standardOutput = side
        p.standardError = side
        try p.run()
        terminal.closeSecondary()
        return (p, terminal)
    }

    /// Waits for `setsid --wait` and the vault; a vault still running after 5 s (a failed test) is
    /// killed, since SIGTERM to setsid does not reach it.
    /// Runs the vault on a terminal of its own until its first "> ", then `body` with the terminal;
    /// afterwards the vault is told to quit and stopped.
    static func withVault(_ d: Daemon, _ body: (PseudoTerminal) throws -> Void) throws {
        let (p, terminal) = try vault(d)
        defer { stop(p) }
        _ = try terminal.read(until: "> ")
        try body(terminal)
        terminal.write("quit\n")
    }

    static func stop(_ p: Process) {
        let deadline = Date().addingTimeInterval(5)
        while p.isRunning && Date() < deadline { usleep(20_000) }  // polls: Process has no timed wait
        if p.isRunning {
            let parent = String(p.processIdentifier)
            for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
                guard let pid = Int32(entry),
                    let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                    let close = stat.lastIndex(of: ")")
                else { continue }
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                if fields.count > 1, fields[1] == parent { kill(pid, SIGKILL) }
            }
            p.terminate()
        }
        p.waitUntilExit()
    }

    @Test func terminalPrompt_whenEscIsPressedWhileAFingerIsAwaited_cancelsWithUserCancel() async throws {
        let d = try await Daemon.withRootFinger()
        try Self.withVault(d) { terminal in
            let prompt = try terminal.command("unlock", until: "(Esc: Keep Locked)")
            #expect(prompt.contains("Place your right index finger"), "\(prompt)")
            // The app's name before its reason, as Apple shows it.
            #expect(prompt.contains("\" wants to Unlock your vault: Place your right index finger"), "\(prompt)")
            terminal.write("\u{1B}")
            _ = try terminal.read(until: "Vault still locked: you cancelled.")
        }
    }

    @Test func terminalPrompt_whenEnterIsPressedAfterTheFallbackIsOffered_choosesItWithUserFallback() async throws {
        let d = try await Daemon.withRootFinger()
        // The first unlock makes the vault's key; the second is the key's right (a finger only).
        try d.touch("root-1")
        try Self.withVault(d) { terminal in
            _ = try terminal.command("unlock", until: "Its key is now kept by localauthd")
            _ = try terminal.command("lock", until: "Vault locked.")
            try d.touch("mallory-1")
            let offered = try terminal.command("unlock", until: "(Enter: Enter password)")
            #expect(offered.contains("ot recognised"), "the fallback comes after a miss: \(offered)")
            _ = try terminal.command("", until: "Vault still locked: you chose to enter a password instead.")
        }
    }
}
