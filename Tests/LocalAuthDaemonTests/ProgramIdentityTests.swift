// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

@testable import LocalAuthDaemon

#if canImport(Glibc)
    import Glibc
#endif

/// What the daemon makes of a process's program (ADR 0012): a Flatpak app from its `/.flatpak-info`,
/// a snap from its AppArmor label and cgroup, else its executable. Fixtures:
/// `Tests/Fixtures/program/`.
@Suite struct ProgramIdentityTests {
    static func fixture(_ name: String) throws -> String {
        let path =
            String(#filePath.dropLast("LocalAuthDaemonTests/ProgramIdentityTests.swift".count))
            + "Fixtures/program/" + name
        return try String(contentsOfFile: path, encoding: .utf8)
    }

    @Test func flatpakInfo_ofAnApp_givesItsApplicationName() throws {
        #expect(ProgramIdentity.parseFlatpakInfo(try Self.fixture("app.flatpak-info")) == "org.example.Vault")
    }

    @Test func flatpakInfo_ofARuntime_givesTheRuntimesName() throws {
        #expect(ProgramIdentity.parseFlatpakInfo(try Self.fixture("runtime.flatpak-info")) == "org.freedesktop.Sdk")
    }

    @Test func flatpakInfo_withAnInvalidID_givesNone() throws {
        #expect(ProgramIdentity.parseFlatpakInfo(try Self.fixture("bad-id.flatpak-info")) == nil)
    }

    @Test(
        arguments: [
            ("", nil), ("[Instance]\ninstance-id=1\n", nil),
            // A name outside [Application] is not the app's.
            ("[Instance]\nname=org.example.Vault\n", nil),
            // The first name of the group counts; a later line does not replace it.
            ("[Application]\nname=org.example.Vault\nname=org.evil.App\n", "org.example.Vault"),
            ("[Application]\n  name = org.example.Vault  \n", "org.example.Vault"),
            ("[Application\nname=org.example.Vault\n", nil),
        ] as [(String, String?)])
    func flatpakInfo_parsesOnlyTheApplicationsName(text: String, id: String?) {
        #expect(ProgramIdentity.parseFlatpakInfo(text) == id)
    }

    @Test(arguments: [
        ("org.example.Vault", true), ("org.example.vault-app", true), ("io.github.some_one.App", true),
        ("org.example", false), ("org..Vault", false), (".org.example.Vault", false), ("org.example.9Vault", false),
        ("org.ex-ample.Vault", false), ("org.example.Vault/../x", false), ("org.example.Vault\n", false),
        (String(repeating: "a.", count: 127) + "abc", false),
    ])
    func flatpakID_followsFlatpaksRule(id: String, valid: Bool) {
        #expect(ProgramIdentity.isValidFlatpakID(id) == valid)
    }

    @Test(
        arguments: [
            (
                "snap.vault.vault (enforce)\n",
                "0::/user.slice/user-1000.slice/user@1000.service/app.slice/snap.vault.vault-1f2e.scope\n", "vault"
            ),
            ("snap.vault_beta.daemon (complain)", "0::/system.slice/snap.vault_beta.daemon.service\n", "vault_beta"),
            ("snap.vault.hook.configure (enforce)", "0::/user.slice/user-1000.slice/session-2.scope\n", "vault"),
            // cgroup v1: the freezer hierarchy, as snapd reads it.
            ("snap.vault.vault (enforce)", "7:freezer:/snap.vault\n1:name=systemd:/user.slice\n", "vault"),
            ("unconfined", "0::/user.slice/user-1000.slice/session-2.scope\n", nil),
            ("/usr/bin/man (enforce)", "0::/system.slice/cron.service\n", nil),
        ] as [(String, String, String?)])
    func snap_isTheLabelsSnap_whenTheCgroupAgrees(label: String, cgroup: String, snap: String?) {
        #expect(ProgramIdentity.snapName(label: label, cgroup: cgroup) == .success(snap))
    }

    /// A user's own systemd names a scope as it is told (`systemd-run --user --scope --unit=snap.…`):
    /// a snap cgroup without the snap's label is not taken for the snap (the process is then a program
    /// by its executable, as a classic snap is); a label and a cgroup naming two snaps are refused.
    @Test func snapCgroup_withoutASnapLabel_isNotTakenForTheSnap() {
        let cgroup = "0::/user.slice/user-1000.slice/user@1000.service/app.slice/snap.vault.vault-1.scope\n"
        #expect(ProgramIdentity.snapName(label: "unconfined", cgroup: cgroup) == .success(nil))
        #expect(ProgramIdentity.snapName(label: nil, cgroup: cgroup) == .success(nil))
        guard case .failure = ProgramIdentity.snapName(label: "snap.other.app (enforce)", cgroup: cgroup) else {
            Issue.record("a label and a cgroup naming two snaps were accepted")
            return
        }
    }

    @Test(arguments: [
        ("vault", true), ("vault_beta", true), ("a1-b2", true), ("Vault", false), ("-vault", false),
        ("vault-", false), ("va--ult", false), ("1234", false), ("vault_", false), ("vault_Key", false),
    ])
    func snapInstance_followsSnapdsRule(name: String, valid: Bool) {
        #expect(ProgramIdentity.isValidSnapInstance(Substring(name)) == valid)
    }

    /// The test process itself: not a Flatpak (no /.flatpak-info here), so its executable, which is
    /// at its path.
    @Test func read_ofThisProcess_isItsExecutable() throws {
        let dir = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        try #require(dir >= 0)
        defer { close(dir) }
        let executable = PeerProcess.executable(procfd: dir)
        let reading = ProgramIdentity.read(procfd: dir, executable: executable)
        #expect(reading == .known(.executable(try #require(executable?.path))))
        #expect(ProgramIdentity.read(procfd: dir, executable: nil) != reading, "no executable, no identity")
        guard case .unknown = ProgramIdentity.read(procfd: dir, executable: ("/usr/bin/vault", false)) else {
            Issue.record("an executable that is not the file at its path was taken as a program")
            return
        }
    }
}
