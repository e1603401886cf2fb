// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthProtocol
import LocalAuthTesting
import Testing

@testable import LocalAuthStore

/// Issue 27, part 3: a right belongs to the program that saved it, as on Apple's systems, where
/// another app cannot read, replace or delete it (ADR 0012). Through the real daemon, with real
/// uids (`setpriv`, the owner `nobody`) and real programs: `localauthctl` as built, and a copy of it
/// at another path — another executable file, so another program to the daemon. Before, any
/// process of the account read, used, replaced and removed any identifier.
@Suite(.onOwnThreads, .timeLimit(.minutes(3)))
struct RightOwnershipTests {
    static let owner = RightIntegrationTests.owner
    static let ownerUID = RightIntegrationTests.ownerUID
    static let secret = RightIntegrationTests.secret
    /// The reader stays open between requests: a touch given before a client starts waits for it,
    /// however long the machine takes to start the client (with the default 2 s linger, a loaded
    /// machine closed the reader first, and the touch was lost).
    static let keepReaderOpen = ["--linger-ms", "-1"]

    /// A copy of `localauthctl` at another path, readable and runnable by the owner.
    static func otherProgram(_ d: DaemonHarness) throws -> String {
        let directory = d.directory + "/other"
        #expect(mkdir(directory, 0o755) == 0)
        let copy = directory + "/vault-stealer"
        try #require(RightHolderTests.copyFile(from: DaemonHarness.binDirectory + "/localauthctl", to: copy))
        return copy
    }

    @Test func right_savedByOneProgram_isAbsentToAnother_whichCanNeitherReadNorReplaceNorRemoveIt() async throws {
        let d = try DaemonHarness(extraArguments: Self.keepReaderOpen)
        try await RightIntegrationTests.ownerWithRight(d)
        let stealer = try Self.otherProgram(d)
        func other(_ arguments: [String], stdin: String? = nil) throws -> (status: Int32, out: String, err: String) {
            try d.ctl(arguments, asUser: Self.ownerUID, stdin: stdin, program: stealer)
        }
        let ownKey = try d.ctl(["right", "show", "vault"], asUser: Self.ownerUID)
        #expect(ownKey.status == 0, "\(ownKey.err)")

        // Seen as absent, exactly as an identifier nobody saved (Apple: another app's right is not found).
        let shown = try other(["right", "show", "vault"])
        let never = try other(["right", "show", "never-saved"])
        #expect(shown.status == 5 && shown.err.contains("notFound"), "\(shown.out) \(shown.err)")
        #expect(shown.status == never.status && shown.err == never.err, "\(shown.err) vs \(never.err)")

        // Not released, even with the owner's finger on the reader.
        try d.simulate("touch", "owner-1")
        let read = try other(["right", "secret", "vault", "--timeout", "3"], stdin: "")
        #expect(read.status == 5 && read.err.contains("notFound"), "\(read.err)")
        #expect(read.out.isEmpty && !read.out.contains(Self.secret))
        #expect(!d.daemonLog.contains(Self.secret))

        // Not removed, one by one or all at once.
        let removed = try other(["right", "remove", "vault"])
        #expect(removed.status == 5 && removed.err.contains("notFound"), "\(removed.err)")
        let all = try other(["right", "remove", "--all"])
        #expect(all.status == 0 && (all.out + all.err).contains("Rights removed: 0"), "\(all.out) \(all.err)")

        // Saving the identifier makes a right of its own; the owner's stays the owner's.
        let saved = try other(["right", "save", "vault", "--requirement", "biometry", "--secret-stdin"], stdin: "mine")
        #expect(saved.status == 0, "\(saved.err)")
        let otherKey = try other(["right", "show", "vault"])
        #expect(otherKey.status == 0 && otherKey.out != ownKey.out, "\(otherKey.out) vs \(ownKey.out)")
        #expect(try d.ctl(["right", "show", "vault"], asUser: Self.ownerUID).out == ownKey.out)

        // The owner's program still reads its own secret, the other program its own.
        try d.simulate("touch", "owner-1")
        let own = try d.ctl(["right", "secret", "vault", "--timeout", "10"], asUser: Self.ownerUID)
        #expect(own.status == 0 && own.out == Self.secret, "\(own.err)")
        try d.simulate("touch", "owner-1")
        let its = try other(["right", "secret", "vault", "--timeout", "10"])
        #expect(its.status == 0 && its.out == "mine", "\(its.err)")

        // Removing its own leaves the owner's.
        #expect(try other(["right", "remove", "vault"]).status == 0)
        #expect(try d.ctl(["right", "show", "vault"], asUser: Self.ownerUID).out == ownKey.out)
        #expect(d.daemonLog.contains("program=\"exe:\(stealer)\""), "the journal names the program")
    }

    /// ADR 0012's migration through the real daemon: a right saved before rights had owners (a
    /// version-1 record, written here as that version wrote it) is seen by any program of the account
    /// until a use the person touched for gives it to that program; then it is absent to the others.
    @Test func right_savedBeforeOwnership_belongsToTheFirstProgramThePersonTouchedFor() async throws {
        let d = try DaemonHarness(extraArguments: Self.keepReaderOpen)
        try await d.enroll(user: Self.owner, printID: "owner-1")
        #expect(d.stop() == 0)
        let sealing = SealingConfiguration(method: .keyFile, keyFile: d.stateDirectory + "-key/sealing.key")
        let store = try EnrollmentStore(stateDirectory: d.stateDirectory, sealing: sealing)
        let identifier = "vault"
        var body = Array(
            """
            localauthd-right 1
            identifier=\(Hex.encode(Array(identifier.utf8)))
            requirement=biometry-any
            domainState=
            createdAtMs=1760000000000
            privateKey=\(Hex.encode((0..<32).map { _ in UInt8.random(in: 1...127) }))
            secretLength=\(Self.secret.utf8.count)

            """.utf8)
        body += Array(Self.secret.utf8) + [UInt8(ascii: "\n")]
        let name = RightRecord.fileName(owner: nil, identifier: identifier)
        try store.atomicWrite(
            store.sealedIfSealing(Seal.seal(body), user: Self.owner, name: name),
            directory: d.stateDirectory + "/users/" + Self.owner, name: name)
        try d.start(extraArguments: Self.keepReaderOpen)
        let stealer = try Self.otherProgram(d)

        // Unowned: as before the change, any program of the account sees it.
        #expect(try d.ctl(["right", "show", "vault"], asUser: Self.ownerUID, program: stealer).status == 0)
        try d.simulate("touch", "owner-1")
        let released = try d.ctl(["right", "secret", "vault", "--timeout", "10"], asUser: Self.ownerUID)
        #expect(released.status == 0 && released.out == Self.secret, "\(released.err)\n\(d.daemonLog)")
        #expect(d.daemonLog.contains("now belongs to"), "\(d.daemonLog)")

        // Now localauthctl's: absent to the other program, and still localauthctl's after a restart.
        let shown = try d.ctl(["right", "show", "vault"], asUser: Self.ownerUID, program: stealer)
        #expect(shown.status == 5 && shown.err.contains("notFound"), "\(shown.err)")
        #expect(d.stop() == 0)
        try d.start(extraArguments: Self.keepReaderOpen)
        try d.simulate("touch", "owner-1")
        let again = try d.ctl(["right", "secret", "vault", "--timeout", "10"], asUser: Self.ownerUID)
        #expect(again.status == 0 && again.out == Self.secret, "\(again.err)")
        #expect(try d.ctl(["right", "show", "vault"], asUser: Self.ownerUID, program: stealer).status == 5)
    }

    /// Ownership is the program's, an authorization the process's: a second process of the same
    /// program (python3) finds the right, but is asked for a finger (and, with none, times out) while
    /// the first holds the authorization.
    @Test func authorization_ofOneProcess_isNotAnotherProcessOfTheSameProgram() async throws {
        let d = try DaemonHarness(extraArguments: Self.keepReaderOpen)
        try await d.enroll(user: Self.owner, printID: "owner-1")
        let save = Request.rightSave(user: nil, identifier: "signer", requirement: .biometryAny, secret: nil)
        #expect(try RightHolderTests.relay(save, d, executable: "/usr/bin/python3")?.isSuccess == true)

        // The first process authorizes with a finger, then stays alive, holding the authorization.
        let mark = d.directory + "/marks/authorized"
        mkdir(d.directory + "/marks", 0o777)
        chmod(d.directory + "/marks", 0o777)
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        holder.arguments = [
            "--reuid=\(Self.ownerUID)", "--regid=\(Self.ownerUID)", "--clear-groups", "/usr/bin/python3", "-c",
            Self.holdingRelay, d.socketPath, mark,
        ]
        let input = Pipe()
        holder.standardInput = input
        holder.standardOutput = FileHandle.nullDevice
        try d.simulate("touch", "owner-1")
        try holder.run()
        let authorize = Request.rightUse(
            RightUseOptions(identifier: "signer", operation: .authorize, prompt: PromptOptions(timeoutMs: 10_000)))
        input.fileHandleForWriting.write(Data(Hello(client: "holder").frame.encoded() + authorize.frame.encoded()))
        let deadline = Date().addingTimeInterval(10)
        while access(mark, F_OK) != 0 && Date() < deadline { usleep(5000) }
        try #require(access(mark, F_OK) == 0, "the first process was never answered\n\(d.daemonLog)")
        #expect(
            d.daemonLog.split(separator: "\n").contains {
                $0.contains(#"operation="1""#) && $0.contains("result=success")
            },
            "the first process was not authorized\n\(d.daemonLog)")

        let sign = Request.rightUse(
            RightUseOptions(
                identifier: "signer", operation: .sign, algorithm: "ecdsaSignatureMessageX962SHA256",
                data: Array("transfer".utf8), prompt: PromptOptions(timeoutMs: 2000)))
        let other = try RightHolderTests.relay(sign, d, executable: "/usr/bin/python3")
        #expect(other?.isSuccess == false && other?.resultCode != .notFound, "\(other?.message ?? "no result")")
        #expect(other?.fields.bytes(.data) == nil)
        try input.fileHandleForWriting.close()
        holder.waitUntilExit()
    }

    /// A client that sends its standard input's first frames, and once it has their RESULT creates
    /// `argv[2]` and stays connected until its standard input closes.
    static let holdingRelay = """
        import os, socket, struct, sys
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sys.argv[1])
        data = b''
        while True:
            chunk = os.read(0, 65536)
            if not chunk:
                break
            data += chunk
            frames, at = [], 0
            while at + 4 <= len(data):
                (length,) = struct.unpack('>I', data[at:at + 4])
                if at + 4 + length > len(data):
                    break
                at += 4 + length
            if at == len(data) and at > 0:
                break
        s.sendall(data)
        out = b''
        while True:
            chunk = s.recv(4096)
            if not chunk:
                sys.exit(1)
            out += chunk
            at, done = 0, False
            while at + 6 <= len(out):
                (length,) = struct.unpack('>I', out[at:at + 4])
                (kind,) = struct.unpack('>H', out[at + 4:at + 6])
                if at + 4 + length > len(out):
                    break
                at += 4 + length
                if kind == 0x8003:
                    done = True
            if done:
                break
        open(sys.argv[2], 'w').close()
        sys.stdin.read()
        """

    /// An upgraded binary keeps its path, and with it its rights; a process still running the file
    /// the upgrade replaced (its exe "PATH (deleted)") is no program the daemon can tell, and is refused
    /// until it is started again.
    @Test func executableReplacedWhileItRuns_isRefused_andTheNewFileAtThePathIsTheSameProgram() async throws {
        let d = try DaemonHarness(extraArguments: Self.keepReaderOpen)
        let directory = d.directory + "/bin"
        #expect(mkdir(directory, 0o755) == 0)
        let app = directory + "/vault-app"
        #expect(RightHolderTests.copyFile(from: "/usr/bin/python3", to: app))
        let save = Request.rightSave(user: nil, identifier: "vault", requirement: .biometryAny, secret: nil)
        #expect(try RightHolderTests.relay(save, d, executable: app)?.isSuccess == true)

        // Started before the upgrade, it connects after it: it waits for its input, which comes
        // after the upgrade.
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        p.arguments = [
            "--reuid=\(Self.ownerUID)", "--regid=\(Self.ownerUID)", "--clear-groups", app, "-c",
            "import select, sys\nselect.select([sys.stdin], [], [])\n" + FrameRelay.script, d.socketPath, "", "",
        ]
        let input = Pipe()
        let output = Pipe()
        p.standardInput = input
        p.standardOutput = output
        try p.run()
        // It runs the old file once setpriv has executed it (the same process).
        let file = try #require(RightHolderTests.realPath(app))
        let deadline = Date().addingTimeInterval(30)
        while (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(p.processIdentifier)/exe")) != file {
            try #require(Date() < deadline && p.isRunning, "the relay never ran \(file)")
            usleep(5000)
        }
        // The upgrade: a new file renamed over the path, as dpkg does.
        #expect(RightHolderTests.copyFile(from: "/usr/bin/python3", to: app + ".new"))
        #expect(rename(app + ".new", app) == 0)
        let get = Request.rightGet(user: nil, identifier: "vault")
        input.fileHandleForWriting.write(Data(Hello(client: "old").frame.encoded() + get.frame.encoded()))
        try input.fileHandleForWriting.close()
        let reply = Array(output.fileHandleForReading.readDataToEndOfFile())
        p.waitUntilExit()
        let old = try frames(in: reply).first { $0.type == .result }.map { try RequestResult(frame: $0) }
        #expect(old?.resultCode == .notAuthorized, "\(old?.message ?? "no result")")
        #expect(old?.message.contains("(deleted)") == true, "\(old?.message ?? "")")

        let restarted = try RightHolderTests.relay(get, d, executable: app)
        #expect(restarted?.isSuccess == true, "the upgraded file at the same path: \(restarted?.message ?? "-")")
    }

    /// A record whose owner cannot be read is served to no program (fail closed): the program whose
    /// name the file has is told the right is unreadable, and the journal says why.
    @Test func right_whoseOwnerCannotBeRead_isRefusedAndTheJournalSaysWhy() async throws {
        let d = try DaemonHarness(extraArguments: Self.keepReaderOpen)
        let saved = try d.ctl(["right", "save", "vault", "--requirement", "biometry"], asUser: Self.ownerUID)
        try #require(saved.status == 0, "\(saved.err)")
        #expect(d.stop() == 0)
        let ctl = try #require(RightHolderTests.realPath(DaemonHarness.binDirectory + "/localauthctl"))
        let name = RightRecord.fileName(owner: "exe:" + ctl, identifier: "vault")
        let directory = d.stateDirectory + "/users/" + Self.owner
        try #require(access(directory + "/" + name, F_OK) == 0, "the right is not where its owner's name says")
        let body = Array(
            """
            localauthd-right 2
            owner=not hex
            identifier=\(Hex.encode(Array("vault".utf8)))
            requirement=biometry-any
            domainState=
            createdAtMs=1
            privateKey=\(Hex.encode((0..<32).map { _ in UInt8.random(in: 1...127) }))
            secretLength=0


            """.utf8)
        let sealing = SealingConfiguration(method: .keyFile, keyFile: d.stateDirectory + "-key/sealing.key")
        let store = try EnrollmentStore(stateDirectory: d.stateDirectory, sealing: sealing)
        try store.atomicWrite(
            store.sealedIfSealing(Seal.seal(body), user: Self.owner, name: name), directory: directory, name: name)
        try d.start(extraArguments: Self.keepReaderOpen)
        let shown = try d.ctl(["right", "show", "vault"], asUser: Self.ownerUID)
        #expect(shown.status != 0 && shown.err.contains("unreadable"), "\(shown.out) \(shown.err)")
        #expect(d.daemonLog.contains("malformed right record: its owner"), "\(d.daemonLog)")
    }

    /// An interpreter is the program: every script python3 runs is one program to the daemon
    /// (`/usr/bin/python3.11`, the file the kernel runs), so a script reads another script's right. What
    /// tells them apart on Apple's systems (code signatures) Linux does not have (ADR 0012).
    @Test func right_savedByOneScript_isReadByAnotherScriptOfTheSameInterpreter() async throws {
        let d = try DaemonHarness(extraArguments: Self.keepReaderOpen)
        let save = Request.rightSave(user: nil, identifier: "script-right", requirement: .biometryAny, secret: nil)
        let saved = try AuthorizationMatrixTests.relay(
            Hello(client: "one").frame.encoded() + save.frame.encoded(), uid: Self.ownerUID, socket: d.socketPath)
        let savedResult = try frames(in: saved).first { $0.type == .result }.map { try RequestResult(frame: $0) }
        #expect(savedResult?.isSuccess == true, "\(savedResult?.message ?? "no result")")

        // Another script (another text, same interpreter) finds it; localauthctl does not.
        let get = Request.rightGet(user: nil, identifier: "script-right")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        p.arguments = [
            "--reuid=\(Self.ownerUID)", "--regid=\(Self.ownerUID)", "--clear-groups", "/usr/bin/python3", "-c",
            "# another script\n" + FrameRelay.script, d.socketPath, "", "",
        ]
        let (reply, _) = try FrameRelay.run(p, client: "two", get)
        let found = try frames(in: reply).first { $0.type == .result }.map { try RequestResult(frame: $0) }
        #expect(found?.isSuccess == true, "\(found?.message ?? "no result")")
        let ctl = try d.ctl(["right", "show", "script-right"], asUser: Self.ownerUID)
        #expect(ctl.status == 5 && ctl.err.contains("notFound"), "\(ctl.err)")
    }

    /// A Flatpak app is its app ID, read from the `/.flatpak-info` at its root through
    /// `/proc/<pid>/root` (never from its environment or argv). Here as bubblewrap builds it: as root,
    /// a private mount namespace (`unshare -m`), a root directory of its own with `/usr` bound in and
    /// the fixture `.flatpak-info` on top, python3 run in it (`chroot`) as the owner. The same
    /// python3 outside the sandbox, or in another app's, is another program.
    @Test func flatpakApp_ownsItsRightsByAppID_readAtItsRootThroughProc() async throws {
        let d = try DaemonHarness(extraArguments: Self.keepReaderOpen)
        let vault = try Self.sandbox(d, name: "vault", info: try Self.fixture("app.flatpak-info"))
        let other = try Self.sandbox(d, name: "other", info: "[Application]\nname=org.example.Other\n")
        let save = Request.rightSave(user: nil, identifier: "vault", requirement: .biometryAny, secret: Array("x".utf8))
        let get = Request.rightGet(user: nil, identifier: "vault")

        let saved = try Self.relay(save, d, in: vault)
        #expect(saved?.isSuccess == true, "\(saved?.message ?? "no result")\n\(d.daemonLog)")
        #expect(d.daemonLog.contains("program=\"flatpak:org.example.Vault\""), "\(d.daemonLog)")
        #expect(try Self.relay(get, d, in: vault)?.isSuccess == true, "the app reads its own right")

        let otherApp = try Self.relay(get, d, in: other)
        #expect(otherApp?.resultCode == .notFound, "\(otherApp?.message ?? "no result")")
        let host = try RightHolderTests.relay(get, d, executable: "/usr/bin/python3")
        #expect(host?.resultCode == .notFound, "the same python3 outside the sandbox: \(host?.message ?? "-")")
        let ctl = try d.ctl(["right", "show", "vault"], asUser: Self.ownerUID)
        #expect(ctl.status == 5 && ctl.err.contains("notFound"), "\(ctl.err)")
    }

    static func fixture(_ name: String) throws -> String {
        let path =
            String(#filePath.dropLast("IntegrationTests/RightOwnershipTests.swift".count)) + "Fixtures/program/" + name
        return try String(contentsOfFile: path, encoding: .utf8)
    }

    /// A root directory for a sandboxed process: `/usr` (and the merged-usr links) to run python3,
    /// the daemon's directory at its own path (the socket), `.flatpak-info` holding `info`.
    static func sandbox(_ d: DaemonHarness, name: String, info: String) throws -> String {
        let root = d.directory + "/sandbox-" + name
        for dir in [root, root + "/usr"] { try #require(mkdir(dir, 0o755) == 0) }
        for link in ["bin", "lib", "lib64", "sbin"] { _ = symlink("usr/" + link, root + "/" + link) }
        try #require(
            FileManager.default.createFile(
                atPath: root + "/.flatpak-info", contents: Data(info.utf8), attributes: [.posixPermissions: 0o644]))
        try FileManager.default.createDirectory(atPath: root + d.directory, withIntermediateDirectories: true)
        return root
    }

    /// One request from python3 run as the owner inside `root`, in a private mount namespace.
    static func relay(_ request: Request, _ d: DaemonHarness, in root: String) throws -> RequestResult? {
        let script = """
            set -e
            root="$1"; shift
            mount --rbind /usr "$root/usr"
            mount --bind "$1" "$root$1"
            exec chroot --userspec=\(ownerUID):\(ownerUID) "$root" /usr/bin/python3 -c "$2" "$3" "" ""
            """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        p.arguments = [
            "--mount", "--propagation", "private", "/bin/sh", "-c", script, "sandbox", root, d.directory,
            FrameRelay.script, d.socketPath,
        ]
        let (reply, said) = try FrameRelay.run(p, client: "sandboxed", request)
        guard p.terminationStatus == 0 else { throw HarnessError.setup("the sandbox did not run: \(said)") }
        return try frames(in: reply).first { $0.type == .result }.map { try RequestResult(frame: $0) }
    }
}
