// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthProtocol
import LocalAuthTesting
import Testing

/// Issue 13, C2 and L1, through the real daemon: a finger only ever answers the person who is at the
/// reader and asked. logind is python-dbusmock's (`Tests/system/logind_mock.py`): the victim,
/// `nobody` (uid 65534), has the active local session on seat0; the attacker is uid 1 (`daemon`),
/// whose `su` is played by `localauthctl` with real uid 1 and effective uid 0, as `su` runs during
/// PAM (measured: /work/coord/facts.md). The real `su` in a terminal: `pam/tests/terminal_test.py`.
@Suite(.onOwnThreads, .serialized, .timeLimit(.minutes(3)))
struct PresenceIntegrationTests {
    static let victim = "nobody"
    static let victimUID = "65534"
    static let attackerUID = "1"

    /// A daemon on a logind where the victim's session `cv` is the active one on seat0 and the
    /// attacker has a session `ca` of their own behind it.
    static func seat() throws -> (DaemonHarness, MockLogind) {
        let logind = try MockLogind(greeter: false)
        try logind.send("add-session cv seat0 65534 nobody user active local")
        try logind.send("add-session ca seat0 1 daemon user inactive local")
        try logind.send("place 65534 cv")
        try logind.send("place 1 ca")
        let d = try DaemonHarness(
            extraArguments: ["--linger-ms", "-1"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": logind.address],
            seat: .given)
        d.companion = logind
        return (d, logind)
    }

    /// `localauthctl` run on a thread of its own; `wait()` gives its outcome.
    final class Background: @unchecked Sendable {
        private var outcome: (status: Int32, out: String, err: String)?
        private let done = DispatchSemaphore(value: 0)

        init(_ run: @escaping @Sendable () throws -> (status: Int32, out: String, err: String)) {
            Thread.detachNewThread {
                self.outcome = try? run()
                self.done.signal()
            }
        }

        func wait() -> (status: Int32, out: String, err: String)? {
            done.wait()
            return outcome
        }
    }

    @Test func su_byAnotherUser_isRefusedAtOnce_andTheVictimsOwnRequestGetsTheTouch() async throws {
        let (d, _) = try Self.seat()
        try await d.enroll(user: Self.victim, printID: "victim")
        // The attacker's `su nobody` asks first; the victim then touches the reader for their own request.
        let su = Background {
            try d.ctl(["verify", "--user", Self.victim, "--timeout", "8"], setuidBy: Self.attackerUID)
        }
        usleep(700_000)  // before, the attacker's request was waiting for a finger by now
        try d.simulate("touch", "victim")
        let own = try d.ctl(["verify", "--timeout", "8"], asUser: Self.victimUID)
        let attacker = try #require(su.wait())
        #expect(attacker.status == 2, "the attacker's su got: \(attacker.out) \(attacker.err)")
        #expect(attacker.err.contains("the request is not from nobody's own session"), "\(attacker.err)")
        #expect(!attacker.out.contains("Place your"), "the attacker's request was prompted: \(attacker.out)")
        #expect(own.status == 0, "the victim's own request did not get the touch: \(own.err)\n\(d.daemonLog)")
    }

    @Test func su_byAnotherUser_learnsNothingAboutTheVictimAndCountsNothing() async throws {
        let (d, _) = try Self.seat()
        var answers: [String] = []
        func attempt() throws {
            let r = try d.ctl(
                ["verify", "--passcode", "--user", Self.victim, "--timeout", "3"], setuidBy: Self.attackerUID,
                stdin: "a guess\n")
            #expect(r.status == 2, "\(r.out) \(r.err)")
            answers.append(r.err)
        }
        try attempt()  // nothing enrolled, no passcode
        try await d.enroll(user: Self.victim, printID: "victim")
        try attempt()  // a finger
        #expect(try d.perform(.passcodeSet(user: Self.victim, passcode: "victim's own", oldPasscode: nil)).0.isSuccess)
        try attempt()  // a passcode
        for _ in 0..<5 { try d.simulate("touch", "guess") }
        _ = try d.ctl(["verify", "--timeout", "5"], asUser: Self.victimUID)  // three misses
        _ = try d.ctl(["verify", "--timeout", "5"], asUser: Self.victimUID)  // two more: locked
        try attempt()  // locked
        #expect(Set(answers).count == 1, "the answers differ with the victim's state: \(answers)")
        // The attacker's guesses reached nothing: the victim's passcode counts no failure from them.
        let status = try d.perform(.status(user: Self.victim)).0
        #expect(status.fields.bool(.biometryLocked) == true)
        let own = try d.ctl(
            ["verify", "--passcode", "--timeout", "5"], asUser: Self.victimUID, stdin: "victim's own\n")
        #expect(own.status == 0, "\(own.err)")
    }

    @Test func greeter_rootAsksForWhoeverTypesTheirName_onlyWhileInFront() async throws {
        let (d, logind) = try Self.seat()
        try await d.enroll(user: Self.victim, printID: "victim")
        try logind.send("add-session cg seat0 0 root greeter active local")
        try logind.send("place 0 cg")
        try d.simulate("touch", "victim")
        let (atGreeter, events) = try d.perform(.evaluate(Self.biometrics(user: Self.victim)))
        #expect(atGreeter.isSuccess, "\(atGreeter.message)")
        #expect(events.first?.message.hasSuffix("for nobody)") == true, "\(events)")
        try logind.send("set-active cg no")
        let (behind, none) = try d.perform(.evaluate(Self.biometrics(user: Self.victim)))
        #expect(behind.resultCode == .biometryNotAvailable && none.isEmpty, "\(behind.message)")
        #expect(behind.message.contains("session in front of the reader"), "\(behind.message)")
    }

    @Test func sessionBehindAnotherOnTheSeat_isRefusedItsOwnFinger() async throws {
        let (d, logind) = try Self.seat()
        try await d.enroll(user: Self.victim, printID: "victim")
        try logind.send("set-active cv no")
        let r = try d.ctl(["verify", "--timeout", "3"], asUser: Self.victimUID)
        #expect(r.status == 2 && r.err.contains("session in front of the reader"), "\(r.err)")
    }

    @Test func rootWithNoSession_isRefused_andAUserServiceOnlyWhileItsUserIsInFront() async throws {
        let (d, logind) = try Self.seat()
        try await d.enroll(user: Self.victim, printID: "victim")
        try logind.send("place 0 none")
        let (cron, events) = try d.perform(.evaluate(Self.biometrics(user: Self.victim)))
        #expect(cron.resultCode == .biometryNotAvailable && events.isEmpty, "\(cron.message)")
        #expect(cron.message.contains("no login session"), "\(cron.message)")
        // The victim's process outside any session (a user service): theirs is the session in front.
        try logind.send("place 65534 none")
        try d.simulate("touch", "victim")
        let service = try d.ctl(["verify", "--timeout", "5"], asUser: Self.victimUID)
        #expect(service.status == 0, "\(service.err)\n\(d.daemonLog)")
        try logind.send("set-active cv no")
        let behind = try d.ctl(["verify", "--timeout", "3"], asUser: Self.victimUID)
        #expect(behind.status == 2 && behind.err.contains("session in front"), "\(behind.err)")
    }

    @Test func withoutLogind_theRequesterMustBeTheTarget_andRootIsRefused() async throws {
        let d = try DaemonHarness(extraArguments: ["--linger-ms", "-1"], seat: .noLogind)
        try await d.enroll(user: Self.victim, printID: "victim")
        let (root, events) = try d.perform(.evaluate(Self.biometrics(user: Self.victim)))
        #expect(root.resultCode == .biometryNotAvailable && events.isEmpty, "\(root.message)")
        let su = try d.ctl(["verify", "--user", Self.victim, "--timeout", "3"], setuidBy: Self.attackerUID)
        #expect(su.status == 2 && su.err.contains("not from nobody's own session"), "\(su.err)")
        try d.simulate("touch", "victim")
        let own = try d.ctl(["verify", "--timeout", "5"], asUser: Self.victimUID)
        #expect(own.status == 0, "\(own.err)")
    }

    @Test func reader_whenAnotherRequestHoldsIt_theSecondIsToldAtOnceWhose_andCountsNothing() async throws {
        let (d, logind) = try Self.seat()
        try logind.send("place 0 cv")  // root's requests come from the victim's session, for the victim
        try await d.enroll(user: Self.victim, printID: "victim")
        #expect(try d.perform(.passcodeSet(user: Self.victim, passcode: "victim's own", oldPasscode: nil)).0.isSuccess)
        let (first, prompt) = try d.startEvaluation(user: Self.victim)
        #expect(prompt.kind == .placeFinger)
        #expect(
            prompt.message.contains("Place your right index finger on the reader ("), "\(prompt.message)")
        #expect(prompt.message.hasSuffix(" for nobody)"), "the prompt names whose request it is: \(prompt.message)")
        // Both policies: the account's turn is the first request's until it ends, so neither waits.
        var owner = Self.biometrics(user: Self.victim)
        owner.policy = .deviceOwnerAuthentication
        owner.flags = [.passcodeCapable]
        for options in [Self.biometrics(user: Self.victim), owner] {
            let started = Date()
            let (second, events) = try d.perform(.evaluate(options))
            let seconds = Date().timeIntervalSince(started)
            #expect(second.resultCode == .biometryNotAvailable, "\(second.message)")
            #expect(second.message.contains("the reader is in use by") && second.message.contains("for nobody"))
            #expect(events.isEmpty, "the second request was prompted: \(events)")
            #expect(seconds < 2, "the busy answer took \(seconds) s")
        }
        // The first request still has the reader and the touch; nothing was counted.
        try d.simulate("touch", "victim")
        let result = try first.receiveResult()
        #expect(result.isSuccess, "\(result.message)")
        #expect(try d.perform(.status(user: Self.victim)).0.fields.bool(.biometryLocked) == false)
    }

    static func biometrics(user: String) -> EvaluateOptions {
        EvaluateOptions(
            policy: .deviceOwnerAuthenticationWithBiometrics, user: user, service: "presence-test", tries: 1,
            timeoutMs: 5000)
    }
}
