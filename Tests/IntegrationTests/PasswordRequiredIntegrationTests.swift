// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthCore
import LocalAuthProtocol
import LocalAuthStore
import LocalAuthTesting
import Testing

/// The "password required" rules through the real daemon (docs/policy.md, rows R): the daemon
/// runs in a private mount namespace whose /proc/sys/kernel/random/boot_id is a file the test
/// rewrites, so "a restart" is a new boot id, as DESIGN.md has it.
@Suite(.onOwnThreads, .serialized, .timeLimit(.minutes(3)))
struct PasswordRequiredIntegrationTests {
    static let user = "alice"
    static let biometrics = EvaluateOptions(
        policy: .deviceOwnerAuthenticationWithBiometrics, user: user, service: "pwtest", tries: 1, timeoutMs: 10_000)

    /// A daemon with alice's finger enrolled and her password reported once in this boot.
    static func daemon(config: String? = nil) async throws -> DaemonHarness {
        var arguments: [String] = []
        if let config {
            let dir = try TemporaryDirectory.make("la-conf")
            try config.write(toFile: dir + "/localauthd.conf", atomically: true, encoding: .utf8)
            arguments = ["--config", dir + "/localauthd.conf"]
        }
        let d = try DaemonHarness(extraArguments: arguments, privateBootID: true)
        try await d.enroll(user: user, printID: "alice-1")
        #expect(try d.perform(.passwordUsed(user: user, service: "login")).0.isSuccess)
        return d
    }

    static func fingerEvaluation(_ d: DaemonHarness) throws -> (RequestResult, [Event], Double) {
        let started = Date()
        let (r, events) = try d.perform(.evaluate(biometrics))
        return (r, events, Date().timeIntervalSince(started) * 1000)
    }

    @Test func evaluate_afterARestart_refusesTheFingerAtOnceWithoutTouchingTheReader() async throws {
        let d = try await Self.daemon()
        try d.simulate("touch", "alice-1")
        #expect(try d.perform(.evaluate(Self.biometrics)).0.isSuccess, "\(d.daemonLog)")

        try d.newBoot()
        // A touch queued on the virtual reader: a scan would take it.
        try d.simulate("touch", "alice-1")
        var times: [Double] = []
        for _ in 0..<11 {
            let (r, events, ms) = try Self.fingerEvaluation(d)
            #expect(r.resultCode == .biometryLockout, "\(r.message)")
            #expect(r.message == "Password required after restart")
            #expect(events.isEmpty, "no prompt, no scan: \(events)")
            times.append(ms)
        }
        let median = times.sorted()[times.count / 2]
        print(
            "after a restart, evaluate → biometryLockout round trip: median \(String(format: "%.2f", median)) ms (n=11)"
        )
        // At once: a scan would wait for the finger. The figure is printed; speed goals live in
        // make bench (a bound near the figure failed under load, 170 ms at load 19).
        #expect(median < 1000)
        #expect(
            d.daemonLog.contains(
                "result=biometryLockout phrase=passwordRequiredAfterRestart message=\"Password required after restart\""
            ))

        // The password (reported by the PAM stack) lets the finger in again; the touch queued
        // before is still there for it: no refused request took it.
        #expect(try d.perform(.passwordUsed(user: Self.user, service: "login")).0.isSuccess)
        let (r, events, _) = try Self.fingerEvaluation(d)
        #expect(r.isSuccess, "\(r.message)\n\(d.daemonLog)")
        #expect(events.contains { $0.kind == .placeFinger })
    }

    @Test func canEvaluate_afterARestart_saysSoBeforeAnyEvaluation() async throws {
        let d = try await Self.daemon()
        try d.newBoot()
        let (biometrics, _) = try d.perform(
            .canEvaluate(policy: .deviceOwnerAuthenticationWithBiometrics, user: Self.user))
        #expect(biometrics.resultCode == .biometryLockout)
        #expect(biometrics.message == "Password required after restart")
        // Policy 2 has a fallback once a passcode is set.
        _ = try d.perform(.passcodeSet(user: Self.user, passcode: "alice passcode", oldPasscode: nil))
        let (owner, _) = try d.perform(.canEvaluate(policy: .deviceOwnerAuthentication, user: Self.user))
        #expect(owner.isSuccess, "\(owner.message)")
    }

    @Test func evaluate_deviceOwner_afterARestart_asksThePasscodeAndItCountsAsThePassword() async throws {
        let d = try await Self.daemon()
        _ = try d.perform(.passcodeSet(user: Self.user, passcode: "alice passcode", oldPasscode: nil))
        try d.newBoot()
        let owner = EvaluateOptions(
            policy: .deviceOwnerAuthentication, user: Self.user, service: "pwtest", flags: [.passcodeCapable],
            tries: 1, timeoutMs: 10_000)
        let (r, events) = try d.perform(.evaluate(owner), onEvent: PolicyIntegrationTests.typing("alice passcode"))
        #expect(r.isSuccess, "\(r.message)")
        #expect(
            events.first
                == Event(.info, "Password required after restart", phrase: .passwordRequired(.restart)),
            "\(events)")
        #expect(!events.contains { $0.kind == .placeFinger })
        // The finger is accepted again.
        try d.simulate("touch", "alice-1")
        #expect(try d.perform(.evaluate(Self.biometrics)).0.isSuccess, "\(d.daemonLog)")
    }

    @Test func rules_surviveADaemonRestartButNeverABoot() async throws {
        let d = try await Self.daemon()
        d.kill9()
        try d.start()
        try d.simulate("touch", "alice-1")
        #expect(try d.perform(.evaluate(Self.biometrics)).0.isSuccess, "the same boot: \(d.daemonLog)")
        try d.newBoot()
        d.kill9()
        try d.start()
        #expect(try d.perform(.evaluate(Self.biometrics)).0.resultCode == .biometryLockout)
        _ = d.stop()
        try d.start()
        #expect(try d.perform(.evaluate(Self.biometrics)).0.resultCode == .biometryLockout, "a restart keeps it")
    }

    @Test func evaluate_when48HoursPassedWithoutThePassword_refusesTheFinger() async throws {
        let d = try await Self.daemon()
        let store = try EnrollmentStore(stateDirectory: d.stateDirectory)
        guard case .ok(var use) = try store.loadPasswordUse(user: Self.user), var password = use.password else {
            throw HarnessError.setup("no record")
        }
        // The same boot, 49 hours earlier on its own clock (and on the wall clock).
        password.bootMs -= 49 * 3_600_000
        password.wallMs -= 49 * 3_600_000
        use.password = password
        try store.savePasswordUse(use, user: Self.user)
        let (r, _) = try d.perform(.evaluate(Self.biometrics))
        #expect(r.resultCode == .biometryLockout)
        #expect(r.message == "Password required after 48 hours")
        let status = try d.ctl(["status", "--user", Self.user])
        #expect(status.out.contains("finger accepted: no — Password required after 48 hours"), "\(status.out)")
    }

    @Test func evaluate_withTheRulesOff_acceptsTheFingerAfterARestart() async throws {
        let d = try await Self.daemon(
            config: "password-after-restart = no\npassword-max-age = off\npassword-idle-max-age = off\n")
        try d.newBoot()
        try d.simulate("touch", "alice-1")
        #expect(try d.perform(.evaluate(Self.biometrics)).0.isSuccess, "\(d.daemonLog)")
    }

    @Test func evaluate_beforeAnyPasswordWasReported_keepsTheBehaviourWithoutTheRules() async throws {
        let d = try DaemonHarness(privateBootID: true)
        try await d.enroll(user: Self.user, printID: "alice-1")
        try d.newBoot()
        try d.simulate("touch", "alice-1")
        #expect(try d.perform(.evaluate(Self.biometrics)).0.isSuccess, "\(d.daemonLog)")
        let status = try d.ctl(["status", "--user", Self.user])
        #expect(status.out.contains("the password-required rules are off"), "\(status.out)")
    }
}
