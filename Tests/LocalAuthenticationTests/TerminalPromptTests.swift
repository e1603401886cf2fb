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

/// A pseudo-terminal pair: the test holds the primary side, the program gets the secondary side.
final class PseudoTerminal {
    let primary: Int32
    private(set) var secondary: Int32
    private var seen: [UInt8] = []

    init() throws {
        // posix_openpt and friends need _XOPEN_SOURCE, which the Glibc module lacks: the ioctls they wrap.
        let unlock: UInt = 0x4004_5431  // TIOCSPTLCK
        let number: UInt = 0x8004_5430  // TIOCGPTN
        primary = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        var locked: Int32 = 0
        var index: Int32 = 0
        guard primary >= 0, ioctl(primary, unlock, &locked) == 0, ioctl(primary, number, &index) == 0 else {
            throw HarnessError.setup("no pseudo-terminal")
        }
        secondary = open("/dev/pts/\(index)", O_RDWR | O_NOCTTY)
        guard secondary >= 0 else { throw HarnessError.setup("cannot open /dev/pts/\(index)") }
    }

    /// Types `line` and Enter, and reads until `marker`.
    func command(_ line: String, until marker: String) throws -> String {
        write(line + "\n")
        return try read(until: marker)
    }

    func closeSecondary() {
        if secondary >= 0 { close(secondary) }
        secondary = -1
    }

    deinit {
        closeSecondary()
        close(primary)
    }

    func write(_ text: String) {
        _ = Array(text.utf8).withUnsafeBytes { Glibc.write(primary, $0.baseAddress, $0.count) }
    }

    /// Everything the program wrote since the last call, up to and including `marker` (10 s at most).
    func read(until marker: String) throws -> String {
        let deadline = Date().addingTimeInterval(10)
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            let text = String(decoding: seen, as: UTF8.self)
            if let range = text.range(of: marker) {
                let upTo = String(text[..<range.upperBound])
                seen = Array(text[range.upperBound...].utf8)
                return upTo
            }
            let left = Int32(deadline.timeIntervalSinceNow * 1000)
            guard left > 0 else { throw HarnessError.setup("'\(marker)' never came; the terminal showed: \(text)") }
            var pfd = pollfd(fd: primary, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, left) > 0 else { continue }
            let n = Glibc.read(primary, &buffer, buffer.count)
            guard n > 0 else { throw HarnessError.setup("the terminal closed; it showed: \(text)") }
            seen += buffer[0..<n]
        }
    }
}
