// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthProtocol
import LocalAuthTesting
import Testing

/// What the daemon refuses to start on (issue 13, M4 and L6): a state or socket directory another
/// user could redirect, an existing directory with a wrong mode (never chmodded), a state
/// directory another daemon holds, a socket another daemon answers on.
@Suite(.onOwnThreads, .timeLimit(.minutes(2)))
struct StartupSafetyTests {
    /// Runs `localauthd` with `arguments` and waits up to 15 s for it to exit; (status, log).
    /// One that does not exit by then is killed, and nil status says so.
    static func runExpectingRefusal(_ arguments: [String], in directory: String) throws -> (Int32?, String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: DaemonHarness.binDirectory + "/localauthd")
        p.arguments = arguments
        p.environment = ["PATH": "/usr/bin:/bin"]
        let logPath = directory + "/refused.log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        p.standardError = log
        p.standardOutput = log
        try p.run()
        let deadline = Date().addingTimeInterval(15)
        while p.isRunning && Date() < deadline { usleep(20_000) }
        var status: Int32? = nil
        if p.isRunning {
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
        } else {
            status = p.terminationStatus
        }
        return (status, (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")
    }

    static func mode(_ path: String) -> mode_t {
        var st = stat()
        return lstat(path, &st) == 0 ? st.st_mode & 0o7777 : 0
    }

    static func inode(_ path: String) -> ino_t {
        var st = stat()
        return lstat(path, &st) == 0 ? st.st_ino : 0
    }

    // MARK: M4

    /// The README's old `--state-dir /tmp/la-state`: a user's symlink there, to /etc, made root
    /// chmod /etc to 0700. Here the link points at a 0755 directory standing in for /etc.
    @Test func stateDirectory_whenASymlink_isRefusedAndItsTargetKeepsItsMode() throws {
        let d = try DaemonHarness()
        let etc = d.directory + "/etc"
        try #require(mkdir(etc, 0o755) == 0 && chmod(etc, 0o755) == 0)
        try #require(symlink(etc, d.directory + "/la-state") == 0)
        let (status, log) = try Self.runExpectingRefusal(
            ["--socket", d.directory + "/other.sock", "--state-dir", d.directory + "/la-state"], in: d.directory)
        #expect(status == 1, "\(log)")
        #expect(log.contains("is a symbolic link"), "\(log)")
        #expect(Self.mode(etc) == 0o755)
        #expect((try? FileManager.default.contentsOfDirectory(atPath: etc)) == [])
    }

    @Test func stateDirectory_whenItExistsWithMode0755_isRefusedAndLeftAsItIs() throws {
        let d = try DaemonHarness()
        let state = d.directory + "/state-755"
        try #require(mkdir(state, 0o755) == 0 && chmod(state, 0o755) == 0)
        let (status, log) = try Self.runExpectingRefusal(
            ["--socket", d.directory + "/other.sock", "--state-dir", state], in: d.directory)
        #expect(status == 1, "\(log)")
        #expect(log.contains("readable by others") && log.contains("must be 0700"), "\(log)")
        #expect(Self.mode(state) == 0o755)
    }

    /// A user's symlink as the socket's directory: root would unlink a socket wherever it points
    /// and bind its own there.
    @Test func socketDirectory_whenAnotherUsersSymlink_isRefusedAndNothingIsMadeThere() throws {
        let d = try DaemonHarness()
        let shared = d.directory + "/tmp"
        try #require(mkdir(shared, 0o1777) == 0 && chmod(shared, 0o1777) == 0)
        let target = d.directory + "/elsewhere"
        try #require(mkdir(target, 0o755) == 0)
        try #require(symlink(target, shared + "/la-run") == 0 && lchown(shared + "/la-run", 65534, 65534) == 0)
        let (status, log) = try Self.runExpectingRefusal(
            ["--socket", shared + "/la-run/socket", "--state-dir", d.directory + "/state2"], in: d.directory)
        #expect(status == 1, "\(log)")
        #expect(log.contains("symbolic link owned by uid 65534"), "\(log)")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: target)) == [])
    }

    // MARK: L6

    @Test func secondDaemon_onTheSameStateDirectory_refusesNamingTheFirstAndLeavesItServing() throws {
        let d = try DaemonHarness()
        let first = try #require(d.process?.processIdentifier)
        let before = Self.inode(d.socketPath)
        let (status, log) = try Self.runExpectingRefusal(
            ["--socket", d.directory + "/second.sock", "--state-dir", d.stateDirectory, "--virtual-reader"],
            in: d.directory)
        #expect(status == 1, "the second daemon must stop at once: \(log)")
        #expect(log.contains("in use by localauthd pid \(first)"), "\(log)")
        #expect(Self.inode(d.socketPath) == before)
        let (r, _) = try d.perform(.devices)
        #expect(r.isSuccess)
    }

    @Test func secondDaemon_onTheSameSocket_refusesAndLeavesTheLiveSocketAlone() throws {
        let d = try DaemonHarness()
        let before = Self.inode(d.socketPath)
        let (status, log) = try Self.runExpectingRefusal(
            ["--socket", d.socketPath, "--state-dir", d.directory + "/state2", "--virtual-reader"], in: d.directory)
        #expect(status == 1, "the second daemon must stop at once: \(log)")
        #expect(log.contains("another daemon answers"), "\(log)")
        #expect(Self.inode(d.socketPath) == before, "the live socket was replaced")
        let (r, _) = try d.perform(.devices)
        #expect(r.isSuccess)
    }

    /// A daemon killed with -9 leaves its socket file and lock file: the kernel dropped the lock,
    /// nobody answers, so the next daemon starts on the same paths.
    @Test func daemon_afterTheFirstWasKilled_startsOnTheSamePaths() throws {
        let d = try DaemonHarness()
        d.kill9()
        #expect(access(d.socketPath, F_OK) == 0, "the killed daemon's socket file stays")
        try d.start()
        let (r, _) = try d.perform(.devices)
        #expect(r.isSuccess)
    }
}
