// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthProtocol
import Testing

@testable import LocalAuthentication

/// `LAContext` against the real daemon and libfprint's virtual reader (or no reader at all).
@Suite(.timeLimit(.minutes(2)))
struct LAContextAvailabilityTests {
    @Test func canEvaluatePolicy_whenNoReader_failsBiometryNotAvailableWithBiometryNone() throws {
        let d = try Daemon(virtualReader: false)
        let context = d.context()
        var error: NSError?
        #expect(!context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        #expect(error?.domain == LAErrorDomain)
        #expect(error?.code == LAError.biometryNotAvailable.rawValue)
        #expect(context.biometryType == .none)
        #expect(context.evaluatedPolicyDomainState == nil)
    }

    @Test func canEvaluatePolicy_whenNothingEnrolled_failsBiometryNotEnrolledWithTouchID() throws {
        let d = try Daemon()
        let context = d.context()
        var error: NSError?
        #expect(!context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        #expect(error?.code == LAError.biometryNotEnrolled.rawValue)
        #expect(context.biometryType == .touchID)
        // The owner policy without a finger or a passcode: nothing can be used.
        #expect(!context.canEvaluatePolicy(.deviceOwnerAuthentication, error: &error))
        #expect(error?.code == LAError.passcodeNotSet.rawValue)
    }

    @Test func canEvaluatePolicy_whenFingerEnrolled_succeedsAndSetsBiometryTypeAndDomainState() async throws {
        let d = try await Daemon.withRootFinger()
        let context = d.context()
        #expect(context.biometryType == .none, "meaningful only after canEvaluatePolicy, as on Apple's systems")
        #expect(context.evaluatedPolicyDomainState == nil)
        var error: NSError? = NSError(domain: "stale", code: 1)
        #expect(context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        #expect(error == nil)
        #expect(context.biometryType == .touchID)
        let state = try #require(context.evaluatedPolicyDomainState)
        #expect(state.count == 32)
        #expect(context.domainState.biometry.biometryType == .touchID)
        #expect(context.domainState.biometry.stateHash == state)
        #expect(context.domainState.stateHash == state)
        #expect(context.canEvaluatePolicy(.deviceOwnerAuthentication, error: nil))
    }

    @Test func canEvaluatePolicy_whenDaemonUnreachable_failsBiometryNotAvailable() throws {
        let context = LAContext()
        context.socketPath = "/nonexistent/localauthd/socket"
        var error: NSError?
        #expect(!context.canEvaluatePolicy(.deviceOwnerAuthentication, error: &error))
        #expect(error?.code == LAError.Code.biometryNotAvailable.rawValue)
        #expect(error?.localizedDescription.contains("cannot reach localauthd") == true, "\(String(describing: error))")
        #expect(context.biometryType == .none)
    }

    @Test func companionPolicies_failCompanionNotAvailableOrFallBackToBiometrics() async throws {
        let d = try await Daemon.withRootFinger()
        let context = d.context()
        var error: NSError?
        #expect(!context.canEvaluatePolicy(.deviceOwnerAuthenticationWithCompanion, error: &error))
        #expect(error?.code == LAError.companionNotAvailable.rawValue)
        #expect(context.biometryType == .touchID, "set whatever canEvaluatePolicy returns")
        #expect(await evaluationError(context, .deviceOwnerAuthenticationWithCompanion)?.code == .companionNotAvailable)
        #expect(context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometricsOrCompanion, error: nil))
        try d.touch("root-1")
        #expect(await evaluationError(context, .deviceOwnerAuthenticationWithBiometricsOrCompanion) == nil)
    }
}

@Suite(.timeLimit(.minutes(2)))
struct LAContextEvaluationTests {
    @Test func evaluatePolicy_whenEnrolledFingerTouches_succeedsAndTheContextCanBeEvaluatedAgain() async throws {
        let d = try await Daemon.withRootFinger()
        let recorder = PromptRecorder()
        let context = d.context(prompt: recorder.prompt)
        try d.touch("root-1")
        #expect(await evaluationError(context, reason: "Open the vault") == nil)
        let placeFinger = try #require(recorder.shown.first)
        #expect(placeFinger.kind == .placeFinger)
        #expect(placeFinger.text.contains("Open the vault"), "the reason reaches the prompt: \(placeFinger.text)")
        #expect(context.evaluatedPolicyDomainState?.count == 32)

        try d.touch("root-1")
        #expect(await evaluationError(context) == nil, "a context can be evaluated again")
    }

    @Test func evaluatePolicy_replyClosure_runsOnAPrivateQueueWithSuccess() async throws {
        let d = try await Daemon.withRootFinger()
        try d.touch("root-1")
        let context = d.context()
        let (success, error, onMain) = await withCheckedContinuation { done in
            context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "Test") {
                success, error in
                done.resume(returning: (success, error, Thread.isMainThread))
            }
        }
        #expect(success)
        #expect(error == nil)
        #expect(!onMain)
    }

    @Test func evaluatePolicy_whenOtherFingerTouches_failsAuthenticationFailed() async throws {
        let d = try await Daemon.withRootFinger()
        // The next finger, once the reader asks for it again.
        let recorder = PromptRecorder.otherFingerEachTry(on: d)
        let context = d.context(prompt: recorder.prompt)
        try d.touch("mallory")
        let error = await evaluationError(context)
        #expect(error?.code == .authenticationFailed)
        #expect(error?.errorCode == -1)
        #expect(recorder.shown.filter { $0.kind == .noMatch }.count == 3, "three tries per evaluation")
    }

    @Test func evaluatePolicy_afterFiveMisses_failsBiometryLockout() async throws {
        let d = try await Daemon.withRootFinger()
        let recorder = PromptRecorder.otherFingerEachTry(on: d)
        let context = d.context(prompt: recorder.prompt)
        try d.touch("mallory")
        #expect(await evaluationError(context)?.code == .authenticationFailed, "misses 1 to 3")
        try d.touch("mallory")
        let locked = await evaluationError(context)
        #expect(locked?.code == .biometryLockout, "misses 4 and 5: \(String(describing: locked))")
        #expect(recorder.shown.contains { $0.kind == .biometryLocked })

        var error: NSError?
        #expect(!context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        #expect(error?.code == LAError.biometryLockout.rawValue)
        // Even the right finger is not asked for any more.
        #expect(await evaluationError(context)?.code == .biometryLockout)
    }

    @Test func evaluatePolicy_ownerPolicyWhenLocked_takesThePasscodeFromTheSuppliedPrompt() async throws {
        let d = try await Daemon.withRootFinger()
        try d.setPasscode("correct horse")
        let recorder = PromptRecorder.otherFingerEachTry(on: d, answers: ["wrong one", "correct horse"])
        let context = d.context(prompt: recorder.prompt)
        context.localizedCancelTitle = "Not now"
        // Five misses lock biometrics; the owner policy then asks for the passcode.
        try d.touch("mallory")
        #expect(await evaluationError(context)?.code == .authenticationFailed)
        try d.touch("mallory")
        #expect(await evaluationError(context)?.code == .biometryLockout)

        #expect(await evaluationError(context, .deviceOwnerAuthentication, reason: "Unlock the vault") == nil)
        let asked = recorder.asked
        #expect(asked.count == 2)
        #expect(asked.map(\.attempt) == [1, 2])
        #expect(asked.first?.localizedReason == "Unlock the vault")
        #expect(asked.first?.localizedCancelTitle == "Not now")
        #expect(asked.first?.text.contains("Unlock the vault") == true, "\(asked.first?.text ?? "")")
        #expect(recorder.shown.contains { $0.kind == .passcodeWrong })
        // The correct passcode lifted the lockout.
        #expect(context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil))
    }

    @Test func evaluatePolicy_ownerPolicyWhenPromptDeclines_failsUserCancel() async throws {
        let d = try Daemon()
        try d.setPasscode("correct horse")
        let recorder = PromptRecorder(answers: [nil])
        let context = d.context(prompt: recorder.prompt)
        #expect(context.canEvaluatePolicy(.deviceOwnerAuthentication, error: nil), "the passcode alone will do")
        #expect(await evaluationError(context, .deviceOwnerAuthentication)?.code == .userCancel)
        #expect(recorder.asked.count == 1)
    }

    @Test func evaluatePolicy_ownerPolicyWithoutAnyPrompt_failsNotInteractive() async throws {
        let d = try Daemon()
        try d.setPasscode("correct horse")
        let context = d.context(prompt: nil)
        let error = await evaluationError(context, .deviceOwnerAuthentication)
        #expect(error?.code == .notInteractive, "\(String(describing: error))")
    }

    @Test func evaluatePolicy_whenInteractionNotAllowed_failsNotInteractive() async throws {
        let d = try await Daemon.withRootFinger()
        let recorder = PromptRecorder()
        let context = d.context(prompt: recorder.prompt)
        context.interactionNotAllowed = true
        #expect(await evaluationError(context)?.code == .notInteractive)
        #expect(recorder.shown.isEmpty, "nothing was asked")
    }

    @Test func evaluatePolicy_whenInvalidated_failsWithAppCancel() async throws {
        let d = try await Daemon.withRootFinger()
        let holder = ContextHolder()
        // invalidate() the moment the daemon asks for the finger: the evaluation is in flight.
        let recorder = PromptRecorder(onMessage: { message in
            if message.kind == .placeFinger {
                DispatchQueue.global().async { holder.context?.invalidate() }
            }
        })
        let context = d.context(prompt: recorder.prompt, timeoutMs: 20_000)
        holder.context = context
        let error = await evaluationError(context)
        #expect(error?.code == .appCancel, "\(String(describing: error))")
        #expect(recorder.shown.first?.kind == .placeFinger)
    }

    @Test func evaluatePolicy_whenInvalidatedWhileAnotherWaitsItsTurn_failsBothWithAppCancel() async throws {
        let d = try await Daemon.withRootFinger()
        let holder = ContextHolder()
        let recorder = PromptRecorder(onMessage: { message in
            if message.kind == .placeFinger { DispatchQueue.global().async { holder.context?.invalidate() } }
        })
        let context = d.context(prompt: recorder.prompt, timeoutMs: 20_000)
        holder.context = context
        let (codes, replies) = AsyncStream.makeStream(of: LAError.Code?.self)
        // Both issued before either runs: the second waits on the context's queue behind the first.
        for _ in 0..<2 {
            context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "Test") { _, error in
                replies.yield((error as? LAError)?.code)
            }
        }
        var received: [LAError.Code?] = []
        for await code in codes {
            received.append(code)
            if received.count == 2 { break }
        }
        #expect(received == [.appCancel, .appCancel])
    }

    @Test func evaluatePolicy_afterInvalidate_failsInvalidContext() async throws {
        let d = try await Daemon.withRootFinger()
        let context = d.context()
        context.invalidate()
        try d.touch("root-1")
        #expect(await evaluationError(context)?.code == .invalidContext)
        var error: NSError?
        #expect(!context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        #expect(error?.code == LAError.invalidContext.rawValue)
    }

    @Test func evaluatePolicy_withinReuseWindow_succeedsWithoutAFinger() async throws {
        let d = try await Daemon.withRootFinger()
        let first = d.context()
        first.touchIDAuthenticationAllowableReuseDuration = 60
        try d.touch("root-1")
        #expect(await evaluationError(first) == nil)

        // Another context of this program, inside the window: no finger is asked for (none comes).
        let recorder = PromptRecorder()
        let second = d.context(prompt: recorder.prompt, timeoutMs: 2000)
        second.touchIDAuthenticationAllowableReuseDuration = 60
        #expect(await evaluationError(second) == nil)
        #expect(!recorder.shown.contains { $0.kind == .placeFinger })

        // Without a window a finger is needed: none comes, and the request times out.
        let third = d.context(prompt: recorder.prompt, timeoutMs: 1500)
        #expect(await evaluationError(third)?.code == .systemCancel)
        #expect(recorder.shown.contains { $0.kind == .placeFinger })
    }

    @Test func reuseDuration_isClampedToApplesMaximum() {
        #expect(LAContext.reuseSeconds(1000) == 300)
        #expect(LAContext.reuseSeconds(LATouchIDAuthenticationMaximumAllowableReuseDuration) == 300)
        #expect(LAContext.reuseSeconds(30.9) == 30)
        #expect(LAContext.reuseSeconds(-5) == 0)
        #expect(LAContext.reuseSeconds(.nan) == 0)
    }

    @Test func evaluatedPolicyDomainState_whenASecondFingerIsEnrolled_changes() async throws {
        let d = try Daemon()
        try await d.enroll(finger: .rightIndex, printID: "root-1")
        let context = d.context()
        #expect(context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil))
        let before = try #require(context.evaluatedPolicyDomainState)
        #expect(context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil))
        #expect(context.evaluatedPolicyDomainState == before, "unchanged while the fingers are")

        try await d.enroll(finger: .leftThumb, printID: "root-2")
        #expect(context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil))
        let after = try #require(context.evaluatedPolicyDomainState)
        #expect(after != before)
        #expect(context.domainState.biometry.stateHash == after)
    }

    @Test func context_usedFromSeveralThreads_answersEveryCallConsistently() async throws {
        let d = try await Daemon.withRootFinger()
        let context = d.context()
        let results = Results()
        DispatchQueue.concurrentPerform(iterations: 16) { i in
            context.localizedFallbackTitle = "Fallback \(i)"
            context.touchIDAuthenticationAllowableReuseDuration = TimeInterval(i)
            var error: NSError?
            let ok = context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error)
            results.append(ok && error == nil && context.biometryType == .touchID)
        }
        #expect(results.all.count == 16)
        #expect(results.all.allSatisfy { $0 })
        #expect(context.localizedFallbackTitle?.hasPrefix("Fallback ") == true)
    }
}

/// The vault example, run as the unprivileged user "nobody" (uid 65534) through `setpriv`, without a
/// terminal: the library authenticates the calling user, for itself.
@Suite(.timeLimit(.minutes(2)))
struct VaultAsUnprivilegedUserTests {
    @Test func vault_asUnprivilegedUser_unlocksWithItsOwnFingerAndLocksAgain() async throws {
        let d = try Daemon()
        try await d.enroll(user: "nobody", printID: "nobody-1")
        try d.touch("nobody-1")
        let r = try d.run("vault", asUser: "65534", stdin: "unlock\nlock\nquit\n")
        #expect(r.status == 0, "\(r.out)")
        #expect(r.out.contains("Unlock with Touch ID"), "\(r.out)")
        #expect(r.out.contains("Vault unlocked"), "\(r.out)")
        #expect(r.out.contains("Vault locked"), "\(r.out)")
        let unlocked = try #require(r.out.range(of: "Vault unlocked"))
        let locked = try #require(r.out.range(of: "Vault locked", range: unlocked.upperBound..<r.out.endIndex))
        #expect(unlocked.upperBound <= locked.lowerBound)
    }

    @Test func vault_asUnprivilegedUserWithoutTerminal_whenPasscodeIsNeeded_reportsNotInteractive() throws {
        let d = try Daemon()
        try d.setPasscode("nobody's passcode", user: "nobody")
        let r = try d.run("vault", asUser: "65534", stdin: "unlock\nquit\n")
        #expect(r.out.contains("Unlock with Passcode") || r.out.contains("Unlock with Touch ID"), "\(r.out)")
        #expect(r.out.contains("no way to ask for your passcode"), "\(r.out)")
        #expect(!r.out.contains("Vault unlocked"), "\(r.out)")
    }

    /// The vault's key lives in an LAPersistedRight bound to the enrolled fingers: a new finger destroys it.
    @Test func vault_whenAnotherFingerIsEnrolled_saysItsKeyIsGone() async throws {
        let d = try Daemon()
        try await d.enroll(user: "nobody", printID: "nobody-1")
        try d.touch("nobody-1")
        let first = try d.run("vault", asUser: "65534", stdin: "unlock\nquit\n")
        #expect(first.out.contains("Its key is now kept by localauthd"), "\(first.out)")

        try d.touch("nobody-1")
        let again = try d.run("vault", asUser: "65534", stdin: "unlock\nquit\n")
        #expect(again.out.contains("Vault unlocked with its key (32 bytes"), "\(again.out)")

        try await d.enroll(user: "nobody", finger: .leftIndex, printID: "nobody-2")
        let gone = try d.run("vault", asUser: "65534", stdin: "unlock\nquit\n")
        #expect(gone.out.contains("The vault's key is gone"), "\(gone.out)")
        #expect(!gone.out.contains("Vault unlocked"), "\(gone.out)")
    }

    @Test func vault_whenTheUsersFingerDoesNotMatch_saysSo() async throws {
        let d = try Daemon()
        try await d.enroll(user: "nobody", printID: "nobody-1")
        for _ in 0..<3 { try d.touch("mallory") }
        let r = try d.run("vault", asUser: "65534", stdin: "unlock\nquit\n")
        #expect(r.out.contains("did not recognise you"), "\(r.out)")
        #expect(!r.out.contains("Vault unlocked"), "\(r.out)")
    }
}

final class ContextHolder: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: LAContext?
    var context: LAContext? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

final class Results: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Bool] = []
    func append(_ value: Bool) { lock.withLock { values.append(value) } }
    var all: [Bool] { lock.withLock { values } }
}
