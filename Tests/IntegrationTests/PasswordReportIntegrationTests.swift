// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthCore
import LocalAuthProtocol
import LocalAuthStore
import LocalAuthTesting
import Testing

/// PASSWORD_USED through the real daemon, from real uids (`setpriv`): who is believed, what is
/// written, and that nothing a refused caller sends changes the record or turns the rules on.
@Suite(.onOwnThreads, .serialized, .timeLimit(.minutes(2)))
struct PasswordReportIntegrationTests {
    static let owner = "nobody"  // uid 65534

    static func use(_ d: DaemonHarness, _ user: String = owner) throws -> PasswordUseLoad {
        try EnrollmentStore(stateDirectory: d.stateDirectory).loadPasswordUse(user: user)
    }

    static func reported(_ d: DaemonHarness) -> Bool {
        access(d.stateDirectory + "/password-reported", F_OK) == 0
    }

    static func report(_ user: String?, as uid: String, _ d: DaemonHarness) throws -> RequestResult {
        let bytes =
            Hello(client: "pam_localauth test").frame.encoded()
            + Request.passwordUsed(user: user, service: "login").frame.encoded()
        let replies = try frames(in: try AuthorizationMatrixTests.relay(bytes, uid: uid, socket: d.socketPath))
        return try RequestResult(frame: try #require(replies.last { $0.type == .result }))
    }

    @Test func passwordUsed_fromRoot_isRecordedOnTheBootClockAndTurnsTheRulesOn() throws {
        let d = try DaemonHarness()
        #expect(!Self.reported(d))
        let before = try #require(bootNowForTests())
        let (r, _) = try d.perform(.passwordUsed(user: Self.owner, service: "login"))
        #expect(r.isSuccess, "\(r.message)\n\(d.daemonLog)")
        #expect(Self.reported(d))
        guard case .ok(let use) = try Self.use(d), let password = use.password else {
            Issue.record("no record: \(try Self.use(d))")
            return
        }
        #expect(password.bootID == before.bootID)
        #expect(password.bootMs >= before.bootMs && password.bootMs < before.bootMs + 10_000)
        #expect(use.finger == nil)
        #expect(d.daemonLog.contains("op=passwordUsed user=\"nobody\""), "\(d.daemonLog)")
        #expect(d.daemonLog.contains("service=\"login\""))
        #expect(d.daemonLog.contains("the password-required rules now apply"))

        // A second report within the minute is answered but not written again.
        let (again, _) = try d.perform(.passwordUsed(user: Self.owner, service: "sudo"))
        #expect(again.isSuccess && again.message.contains("already recorded"), "\(again.message)")
        #expect(try Self.use(d) == .ok(use))
    }

    @Test func passwordUsed_whenFlooded_isAnsweredButWrittenOnceAMinute() throws {
        let d = try DaemonHarness()
        #expect(try d.perform(.passwordUsed(user: Self.owner, service: "login")).0.isSuccess)
        let path = d.stateDirectory + "/users/\(Self.owner)/password"
        var first = stat()
        #expect(stat(path, &first) == 0)
        let started = Date()
        for _ in 0..<200 {
            let (r, _) = try d.perform(.passwordUsed(user: Self.owner, service: "flood"))
            #expect(r.isSuccess && r.message.contains("already recorded"), "\(r.message)")
        }
        let elapsed = Date().timeIntervalSince(started)
        var after = stat()
        #expect(stat(path, &after) == 0)
        // Every store write renames a new file into place: the same inode means no write.
        #expect(after.st_ino == first.st_ino, "the record was rewritten during the flood")
        print(
            "200 coalesced password reports from root: \(String(format: "%.1f", elapsed * 1000 / 200)) ms each, no write"
        )
    }

    @Test func passwordUsed_fromAnotherUser_isRefusedAndChangesNothing() throws {
        let d = try DaemonHarness()
        let r = try Self.report(Self.owner, as: "1", d)
        #expect(r.resultCode == .notAuthorized, "\(r.message)")
        #expect(try Self.use(d) == .absent)
        #expect(!Self.reported(d))
    }

    @Test func passwordUsed_fromTheUsersOwnProcessOutsideASession_isRefused() throws {
        // A cron job or a user service: uid 65534 itself, in no logind session.
        let logind = try MockLogind(greeter: false)
        let d = try LogindTests.daemon(logind)
        for user in [Self.owner, nil] {
            let r = try Self.report(user, as: "65534", d)
            #expect(r.resultCode == .notAuthorized, "\(r.message)")
            #expect(r.message == PasswordReport.Refusal.noSession.message)
        }
        #expect(try Self.use(d) == .absent)
        #expect(!Self.reported(d))
        #expect(d.daemonLog.contains("op=passwordUsed user=\"nobody\" caller_uid=65534"), "\(d.daemonLog)")
    }

    @Test func passwordUsed_fromTheUsersOwnActiveLocalSession_isBelievedAndFromItsOtherSessionsRefused() throws {
        // uid 65534 placed, in turn, in a greeter session, an inactive session, another user's
        // session, then its own active local session (a screen locker's place).
        let logind = try MockLogind()
        let d = try LogindTests.daemon(logind)
        let refusals: [(String, PasswordReport.Refusal)] = [
            ("c2 seat0 65534 nobody greeter active local", .sessionClass("greeter")),
            ("c3 seat0 65534 nobody user inactive local", .sessionNotActive),
            ("c4 seat0 1 daemon user active local", .notOwnSession),
            ("c5 seat0 65534 nobody user active remote", .remoteSession),
        ]
        for (session, refusal) in refusals {
            _ = try logind.send("add-session " + session)
            _ = try logind.send("place 65534 " + session.split(separator: " ")[0])
            let r = try Self.report(Self.owner, as: "65534", d)
            #expect(r.resultCode == .notAuthorized && r.message == refusal.message, "\(session): \(r.message)")
            #expect(try Self.use(d) == .absent)
            #expect(!Self.reported(d))
        }
        _ = try logind.send("add-session c6 seat0 65534 nobody user active local")
        _ = try logind.send("place 65534 c6")
        let r = try Self.report(Self.owner, as: "65534", d)
        #expect(r.isSuccess, "\(r.message)\n\(d.daemonLog)")
        #expect(Self.reported(d))
        guard case .ok(let use) = try Self.use(d) else {
            Issue.record("no record: \(try Self.use(d))")
            return
        }
        #expect(use.password != nil)
    }

    @Test func passwordUsed_fromARemoteSession_isRefusedEvenFromRoot() throws {
        let logind = try MockLogind()
        try logind.send("session remote")
        let d = try LogindTests.daemon(logind)
        let (r, _) = try d.perform(.passwordUsed(user: Self.owner, service: "sshd"))
        #expect(r.resultCode == .notAuthorized, "\(r.message)")
        #expect(r.message == PasswordReport.Refusal.remoteSession.message)
        #expect(try Self.use(d) == .absent)
        #expect(!Self.reported(d))
    }

    @Test func status_saysWhetherTheFingerIsAcceptedAndUntilWhen() throws {
        let d = try DaemonHarness()
        let off = try d.ctl(["status", "--user", Self.owner])
        #expect(off.status == 0, "\(off.err)")
        #expect(off.out.contains("the password-required rules are off"), "\(off.out)")

        // Another account after the first report: nothing of it recorded in this boot.
        #expect(try d.perform(.passwordUsed(user: "daemon", service: "login")).0.isSuccess)
        let before = try d.ctl(["status", "--user", Self.owner])
        #expect(
            before.out.contains("finger accepted: no — Password required after restart; it is accepted again once"),
            "\(before.out)")
        let (status, _) = try d.perform(.status(user: Self.owner))
        #expect(status.fields.int(.passwordRule) == 2)
        #expect(status.fields.string(.passwordReason) == "Password required after restart")

        #expect(try d.perform(.passwordUsed(user: Self.owner, service: "login")).0.isSuccess)
        let after = try d.ctl(["status", "--user", Self.owner], asUser: "65534")
        #expect(after.out.contains("finger accepted: yes, until "), "\(after.out)")
        let (accepted, _) = try d.perform(.status(user: Self.owner))
        let until = try #require(accepted.fields.int(.fingerUntilMs))
        let expected = Int64(Date().timeIntervalSince1970 * 1000) + 48 * 3_600_000
        #expect(abs(until - expected) < 60_000, "\(until) vs \(expected)")

        // The same record from another boot: a restart.
        guard case .ok(var use) = try Self.use(d) else { throw HarnessError.setup("no record") }
        use.password?.bootID = "00000000000000000000000000000000"
        try EnrollmentStore(stateDirectory: d.stateDirectory).savePasswordUse(use, user: Self.owner)
        let (restarted, _) = try d.perform(.status(user: Self.owner))
        #expect(restarted.fields.string(.passwordReason) == "Password required after restart")
    }

    @Test func passwordUsed_whenTheRecordIsDamaged_writesAFreshOne() throws {
        let d = try DaemonHarness()
        #expect(try d.perform(.passwordUsed(user: Self.owner, service: "login")).0.isSuccess)
        let path = d.stateDirectory + "/users/\(Self.owner)/password"
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        guard case .corrupt = try Self.use(d) else { throw HarnessError.setup("not corrupt") }
        let (r, _) = try d.perform(.passwordUsed(user: Self.owner, service: "login"))
        #expect(r.isSuccess, "\(r.message)")
        guard case .ok(let use) = try Self.use(d) else { throw HarnessError.setup("not rewritten") }
        #expect(use.password != nil)
        #expect(d.daemonLog.contains("unreadable"))
    }
}

/// The test process's view of now: the boot id and boot clock the daemon reads.
func bootNowForTests() -> BootInstant? {
    guard let text = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8) else {
        return nil
    }
    var ts = timespec()
    clock_gettime(CLOCK_BOOTTIME, &ts)
    let id = text.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "-", with: "")
    return BootInstant(bootID: id, bootMs: Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000, wallMs: 0)
}
