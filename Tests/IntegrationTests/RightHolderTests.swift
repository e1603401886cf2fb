// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthProtocol
import LocalAuthTesting
import Testing

/// Issue 26: a touch must go where the person thinks. A process of the user renamed `sudo` with
/// `prctl(PR_SET_NAME)` asked to use a right a moment before the user's own request; the person was
/// told "the reader is in use by sudo for …", touched, and the process got the secret. Through the
/// real daemon and the real `localauthctl`, with real uids (`setpriv`): the owner is `nobody`.
@Suite(.onOwnThreads, .timeLimit(.minutes(3)))
struct RightHolderTests {
    static let owner = RightIntegrationTests.owner
    static let ownerUID = RightIntegrationTests.ownerUID

    /// A process of the owner's that names itself `name` (`prctl(PR_SET_NAME)`, as malware would), runs
    /// from `executable`, and asks RIGHT_USE for the right "vault" (or sends `request`): started, and
    /// waited for until the daemon has prompted it (the reader is its). `finish()` returns the frames
    /// it got. A right belongs to the program that saved it (ADR 0012): unless `request` is given, the
    /// same program first saves its own "vault", with the owner's secret.
    final class RenamedHolder {
        let process = Process()
        let output = Pipe()
        let prompted: String

        /// `prefix`: arguments before the script's (`executable` then runs python itself).
        init(
            _ d: DaemonHarness, name: String, executable: String = "/usr/bin/python3", prefix: [String] = [],
            timeoutMs: Int64 = 20_000, request: Request? = nil
        ) throws {
            if request == nil {
                let save = Request.rightSave(
                    user: nil, identifier: "vault", requirement: .biometryAny,
                    secret: Array(RightIntegrationTests.secret.utf8))
                let result = try RightHolderTests.relay(save, d, executable: executable, prefix: prefix)
                guard result?.isSuccess == true else {
                    throw HarnessError.setup("the holder's program could not save its right: \(result?.message ?? "-")")
                }
            }
            // A directory the holder (uid 65534) may write its mark into.
            let marks = d.directory + "/marks"
            mkdir(marks, 0o777)
            chmod(marks, 0o777)
            prompted = marks + "/holder-prompted"
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments =
                [
                    "--reuid=\(RightHolderTests.ownerUID)", "--regid=\(RightHolderTests.ownerUID)", "--clear-groups",
                    executable,
                ] + prefix + ["-c", FrameRelay.script, d.socketPath, prompted, name]
            let input = Pipe()
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            let use =
                request
                ?? Request.rightUse(
                    RightUseOptions(
                        user: RightHolderTests.owner, identifier: "vault", operation: .loadSecret,
                        prompt: PromptOptions(timeoutMs: timeoutMs))
                )
            input.fileHandleForWriting.write(
                Data(Hello(client: "renamed").frame.encoded() + use.frame.encoded()))
            try input.fileHandleForWriting.close()
            let deadline = Date().addingTimeInterval(10)
            while access(prompted, F_OK) != 0 {
                guard Date() < deadline, process.isRunning else {
                    throw HarnessError.setup("the renamed holder was never prompted\n\(d.daemonLog)")
                }
                usleep(5000)
            }
        }

        /// Its frames, once it has its RESULT.
        func finish() throws -> [Frame] {
            let bytes = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return try frames(in: Array(bytes))
        }
    }

    /// The other client is told whose request has the reader by the executable, which the process
    /// cannot choose, and what it would release: not "sudo". Before: "the reader is in use by sudo for
    /// nobody; try again when it is done".
    @Test func rightUse_byAProcessRenamedSudo_isNamedByItsExecutableAndTheRight_toTheNextClient() async throws {
        let d = try DaemonHarness()
        try await RightIntegrationTests.ownerWithRight(d, requirement: "biometry-current-set")
        let holder = try RenamedHolder(d, name: "sudo")
        let python = try #require(Self.realPath("/usr/bin/python3"))

        let told = try d.ctl(["right", "secret", "vault", "--timeout", "5"], asUser: Self.ownerUID)
        #expect(told.status == 2, "\(told.err)")
        #expect(
            told.err.contains("the reader is in use by \(python) for nobody, asking to release vault"), "\(told.err)")
        #expect(!told.err.contains("sudo"), "\(told.err)")

        try d.simulate("touch", "owner-1")
        let result = try #require(try holder.finish().last)
        #expect(try RequestResult(frame: result).resultCode == .success)
    }

    /// The security model's decision (docs/security.md, "Rights"): an evaluation — the person's sudo,
    /// su, screen locker — takes precedence over a right's use of the same account, which nobody may
    /// be watching. The right's use ends with `systemCancel` and releases nothing; the evaluation gets
    /// the reader, and the touch. Before: the evaluation was refused at once ("in use by sudo for
    /// nobody") and the touch released the secret to the renamed process.
    @Test func evaluate_whileAHiddenRightUseHoldsTheReader_takesIt_andTheTouchReleasesNothing() async throws {
        let d = try DaemonHarness()
        try await RightIntegrationTests.ownerWithRight(d, requirement: "biometry-current-set")
        let holder = try RenamedHolder(d, name: "sudo")

        let verify = Task.detached { try d.ctl(["verify", "--timeout", "20"], asUser: Self.ownerUID) }
        // The right's use is told to yield as the evaluation comes: it ends with nothing released.
        // Then the person, seeing the prompt of the request they made, touches. (Touched after
        // half a second instead, the touch could reach the right's scan on a loaded machine.)
        let frames = try holder.finish()
        try d.simulate("touch", "owner-1")
        let verified = try await verify.value
        #expect(verified.status == 0, "\(verified.out) \(verified.err)")

        let result = try RequestResult(frame: try #require(frames.last))
        #expect(result.resultCode == .systemCancel, "\(result.message)")
        #expect(result.fields.bytes(.data) == nil)
        #expect(
            !frames.contains { String(decoding: $0.encoded(), as: UTF8.self).contains(RightIntegrationTests.secret) })
        #expect(!d.daemonLog.contains(RightIntegrationTests.secret))
    }

    /// The same through the PAM module, as sudo or a screen locker would ask (pamtester under
    /// pam_wrapper, the module built by `make pam`): the stack's prompt is its own, naming the
    /// program by its executable, and the touch authenticates it. Before: the module said "the reader
    /// is in use by sudo for nobody", the stack failed, and the touch released the secret.
    @Test func pamStack_whileAHiddenRightUseHoldsTheReader_isPromptedAndTheTouchIsItsOwn() async throws {
        let module =
            ProcessInfo.processInfo.environment["LOCALAUTH_PAM_MODULE"]
            ?? String(#filePath.dropLast("Tests/IntegrationTests/RightHolderTests.swift".count))
            + "pam/build/pam_localauth.so"
        // Without the module this test would prove nothing about PAM: fail, not skip.
        try #require(access(module, R_OK) == 0, "no \(module): run make pam")
        let d = try DaemonHarness()
        try await RightIntegrationTests.ownerWithRight(d, requirement: "biometry-current-set")
        let services = d.directory + "/pam.d"
        #expect(mkdir(services, 0o755) == 0)
        let stack = "auth required \(module) socket=\(d.socketPath) timeout=10\n"
        #expect(FileManager.default.createFile(atPath: services + "/sudo-test", contents: Data(stack.utf8)))
        #expect(FileManager.default.createFile(atPath: services + "/other", contents: Data()))
        let holder = try RenamedHolder(d, name: "sudo")

        let pam = Process()
        pam.executableURL = URL(fileURLWithPath: "/usr/bin/pamtester")
        pam.arguments = ["-v", "sudo-test", Self.owner, "authenticate"]
        pam.environment = [
            "PATH": "/usr/bin:/bin", "LD_PRELOAD": "libpam_wrapper.so", "PAM_WRAPPER": "1",
            "PAM_WRAPPER_SERVICE_DIR": services,
        ]
        let output = Pipe()
        pam.standardOutput = output
        pam.standardError = output
        pam.standardInput = FileHandle.nullDevice
        try pam.run()
        // The right's use yields to the stack's evaluation (its RESULT), then the touch comes.
        let frames = try holder.finish()
        try d.simulate("touch", "owner-1")
        let said = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        pam.waitUntilExit()
        #expect(pam.terminationStatus == 0, "\(said)")
        #expect(said.contains("(/usr/bin/pamtester for nobody)"), "\(said)")
        #expect(!said.contains("in use by"), "\(said)")

        let result = try RequestResult(frame: try #require(frames.last))
        #expect(result.resultCode == .systemCancel, "\(result.message)")
        #expect(result.fields.bytes(.data) == nil)
    }

    /// What `localauthctl` prints of the daemon's text has no control character, whatever name the
    /// other process gave itself or its file: `\e]0;PWN\a\e[2K` set the window title and erased the
    /// line. Before: printed raw (the `comm` the process chose).
    @Test func busyLine_namingAProgramWithEscapesInItsNameAndPath_reachesTheTerminalWithoutControls() async throws {
        let d = try DaemonHarness()
        try await RightIntegrationTests.ownerWithRight(d)
        let hostile = "\u{1B}]0;PWN\u{07}\u{1B}[2K"
        let directory = d.directory + "/" + hostile
        #expect(mkdir(directory, 0o755) == 0)
        let copy = directory + "/python3"
        #expect(Self.copyFile(from: "/usr/bin/python3", to: copy))
        let holder = try RenamedHolder(d, name: hostile, executable: copy)

        let told = try d.ctl(["right", "secret", "vault", "--timeout", "5"], asUser: Self.ownerUID)
        #expect(told.status == 2, "\(told.err)")
        #expect(told.err.contains("the reader is in use by"), "\(told.err)")
        #expect(
            !told.err.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\n") || (0x7F...0x9F).contains($0.value) },
            "\(told.err.debugDescription)")
        #expect(
            told.err.contains("\u{FFFD}]0;PWN\u{FFFD}\u{FFFD}[2K/python3 for nobody"), "\(told.err.debugDescription)")

        try d.simulate("touch", "owner-1")
        _ = try holder.finish()
    }

    /// A user's own mount namespace (`unshare -rm`, open to every user here) can bind any file over
    /// `/usr/bin/sudo`: the process's exe then reads "/usr/bin/sudo". The daemon names a path only
    /// when it is the same file in the daemon's namespace (device and inode), else "a program that is
    /// not /usr/bin/sudo"; and such a process is no program the daemon can tell, so no right is its
    /// (ADR 0012): it could otherwise pose as any program by binding its own file over that program's.
    @Test func request_fromANamespaceWhereItsFileIsMountedOverSudo_isNotNamedSudo_andOwnsNoRight() async throws {
        let d = try DaemonHarness()
        try await d.enroll(user: Self.owner, printID: "owner-1")
        let directory = d.directory + "/bin"
        #expect(mkdir(directory, 0o755) == 0)
        let copy = directory + "/python3"
        #expect(Self.copyFile(from: "/usr/bin/python3", to: copy))
        let launcher = directory + "/as-sudo"
        let shell = "#!/bin/sh\nmount --bind \"\(copy)\" /usr/bin/sudo && exec /usr/bin/sudo \"$@\"\n"
        // Written here, but run from a copy `cp` wrote (`copyFile`: ETXTBSY).
        #expect(FileManager.default.createFile(atPath: launcher + ".sh", contents: Data(shell.utf8)))
        #expect(Self.copyFile(from: launcher + ".sh", to: launcher))

        let save = Request.rightSave(user: nil, identifier: "vault", requirement: .biometryAny, secret: nil)
        let saved = try Self.relay(save, d, executable: "/usr/bin/unshare", prefix: ["-rm", launcher])
        #expect(saved?.resultCode == .notAuthorized, "\(saved?.message ?? "no result")")
        #expect(saved?.message.contains("cannot tell which program this is") == true, "\(saved?.message ?? "")")

        let evaluate = Request.evaluate(
            EvaluateOptions(policy: .deviceOwnerAuthenticationWithBiometrics, user: Self.owner, timeoutMs: 20_000))
        let holder = try RenamedHolder(
            d, name: "sudo", executable: "/usr/bin/unshare", prefix: ["-rm", launcher], request: evaluate)
        let told = try d.ctl(["verify", "--timeout", "5"], asUser: Self.ownerUID)
        #expect(told.err.contains("in use by a program that is not /usr/bin/sudo for nobody"), "\(told.err)")

        try d.simulate("touch", "owner-1")
        _ = try holder.finish()
    }

    /// One request from `executable` (python3, or a launcher of it with `prefix`) as the owner, on a
    /// fresh connection; its RESULT.
    static func relay(_ request: Request, _ d: DaemonHarness, executable: String, prefix: [String] = []) throws
        -> RequestResult?
    {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        p.arguments =
            ["--reuid=\(ownerUID)", "--regid=\(ownerUID)", "--clear-groups", executable] + prefix + [
                "-c", FrameRelay.script, d.socketPath, "", "",
            ]
        let (reply, said) = try FrameRelay.run(p, client: "relay", request)
        let received = try frames(in: reply)
        guard let result = received.first(where: { $0.type == .result }) else {
            throw HarnessError.setup(
                "no RESULT from \(executable) (exit \(p.terminationStatus), frames \(received.map(\.type)), stderr: \(said))\n\(d.daemonLog)"
            )
        }
        return try RequestResult(frame: result)
    }

    /// A daemon without capabilities (`CapabilityBoundingSet=`; the shipped unit grants it
    /// `CAP_SYS_PTRACE` alone, ADR 0012) may not read another uid's exe. Then the renamed process is
    /// said to be what is known of it, a program calling itself 'sudo', never "sudo"; a setuid-root
    /// program the user started (root's credentials, the user's real uid: su, sudo) by the kernel's
    /// name of it, which no process of the user can set; and no program of the user has rights, since
    /// the daemon cannot tell which program asks: refused, saying so (fail closed).
    @Test func withoutCapabilities_aRenamedProcessIsSaidToCallItselfSudo_andASetuidProgramIsNamed() async throws {
        let d = try DaemonHarness(launcher: ["/usr/bin/setpriv", "--bounding-set=-all", "--inh-caps=-all"])
        try await d.enroll(user: Self.owner, printID: "owner-1")
        let saved = try d.ctl(["right", "save", "vault", "--requirement", "biometry"], asUser: Self.ownerUID)
        #expect(saved.status == 3, "\(saved.err)")
        #expect(saved.err.contains("the daemon cannot tell which program this is"), "\(saved.err)")

        let evaluate = Request.evaluate(
            EvaluateOptions(policy: .deviceOwnerAuthenticationWithBiometrics, user: Self.owner, timeoutMs: 20_000))
        let holder = try RenamedHolder(d, name: "sudo", request: evaluate)
        let told = try d.ctl(["verify", "--timeout", "5"], asUser: Self.ownerUID)
        #expect(
            told.err.contains("the reader is in use by a program calling itself 'sudo' for nobody"), "\(told.err)")
        try d.simulate("touch", "owner-1")
        _ = try holder.finish()

        // Returned once it shows its finger prompt: its request holds the reader.
        let setuid = try d.ctlStarted(["verify", "--timeout", "30", "--user", Self.owner], setuidBy: Self.ownerUID)
        let second = try d.ctl(["verify", "--timeout", "5"], asUser: Self.ownerUID)
        #expect(second.err.contains("the reader is in use by localauthctl for nobody"), "\(second.err)")
        try d.simulate("touch", "owner-1")
        let verified = try setuid.finish()
        #expect(verified.status == 0, "\(verified.out) \(verified.err)")
    }

    /// A setuid-root program the user started is named by its executable's file name, not by the
    /// kernel's `comm`, which is cut to 15 bytes: polkit's prompt named its helper "polkit-agent-he"
    /// (before: "localauthctl-po" here, for a copy of localauthctl with a long name).
    @Test func setuidProgramWithALongName_isNamedByItsWholeFileName() async throws {
        let d = try DaemonHarness()
        try await d.enroll(user: Self.owner, printID: "owner-1")
        let helper = d.directory + "/localauthctl-polkit-agent-helper-1"
        try #require(Self.copyFile(from: DaemonHarness.binDirectory + "/localauthctl", to: helper))
        // Returned once it shows its finger prompt: the helper's request holds the reader.
        let setuid = try d.ctlStarted(
            ["verify", "--timeout", "30", "--user", Self.owner], setuidBy: Self.ownerUID, program: helper)
        let second = try d.ctl(["verify", "--timeout", "5"], asUser: Self.ownerUID)
        #expect(
            second.err.contains("the reader is in use by localauthctl-polkit-agent-helper-1 for nobody"),
            "\(second.err)")
        try d.simulate("touch", "owner-1")
        let verified = try setuid.finish()
        #expect(verified.status == 0, "\(verified.out) \(verified.err)")
    }

    /// An account keeps at most 64 rights: the 65th is refused with the limit named, and removing one
    /// makes room again (before, a user's processes could save rights until the disk was full).
    @Test func saveRight_beyondSixtyFour_isRefusedWithTheLimit_andRemovingOneMakesRoom() async throws {
        let d = try DaemonHarness()
        for i in 0..<64 {
            let saved = try d.ctl(
                ["right", "save", "app-\(i)", "--requirement", "passcode", "--secret-stdin"], asUser: Self.ownerUID,
                stdin: String(repeating: "s", count: 1024))
            try #require(saved.status == 0, "right \(i): \(saved.err)")
        }
        let refused = try d.ctl(["right", "save", "app-64", "--requirement", "passcode"], asUser: Self.ownerUID)
        #expect(refused.status == 5, "\(refused.err)")
        #expect(refused.err.contains("An account has at most 64 rights"), "\(refused.err)")
        #expect(refused.err.contains("invalidRequest"), "\(refused.err)")
        #expect(try d.ctl(["right", "show", "app-64"], asUser: Self.ownerUID).status == 5)

        #expect(try d.ctl(["right", "remove", "app-3"], asUser: Self.ownerUID).status == 0)
        let room = try d.ctl(["right", "save", "app-64", "--requirement", "passcode"], asUser: Self.ownerUID)
        #expect(room.status == 0, "\(room.err)")
        // Another account's limit is its own.
        let other = try d.ctl(["right", "save", "app-0", "--requirement", "passcode"], asUser: "1")
        #expect(other.status == 0, "\(other.err)")
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// An executable copy of `from` at `to`, written by `cp`, a process of its own: this process never
    /// holds a descriptor open for writing the copy. It did (`O_CLOEXEC` too), and a child another
    /// test was spawning meanwhile held that descriptor from its fork to its exec; running the copy
    /// then failed with ETXTBSY (exit 126, "could not save its right"). Measured with a copy of
    /// python3 run at once while two threads spawned children: 6 of 100 runs failed so, 0 of 100 with
    /// `cp` (Tests/README.md, "Races a test must not have").
    static func copyFile(from: String, to: String) -> Bool {
        let cp = Process()
        cp.executableURL = URL(fileURLWithPath: "/bin/cp")
        cp.arguments = ["--", from, to]
        guard (try? cp.runToEnd(stdin: nil))?.status == 0 else { return false }
        return access(to, F_OK) == 0 && chmod(to, 0o755) == 0
    }
}
