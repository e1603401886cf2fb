// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

@testable import LocalAuthentication

/// Runs the Apple-style code of `BiometricLogin.swift`: with a subclassed context (no daemon), and with a
/// real context whose daemon is unreachable — so that the reply, the hop to the main queue and the error
/// mapping run for real. The daemon-backed behaviour is in LocalAuthenticationTests.
@MainActor
@Suite(.timeLimit(.minutes(1)))
struct AppleStyleTests {
    /// A real context that reaches no daemon (a test hook; Apple-style code cannot say where the daemon is).
    static func unreachableContext() -> LAContext {
        let context = LAContext()
        context.socketPath = "/nonexistent/localauthd.socket"
        context.linuxPrompt = nil
        return context
    }

    /// Marks the main queue. On Linux the main queue may be drained by a thread other than the main thread
    /// (`dispatch_main`), so `Thread.isMainThread` cannot tell.
    static let mainQueueKey: DispatchSpecificKey<String> = {
        let key = DispatchSpecificKey<String>()
        DispatchQueue.main.setSpecific(key: key, value: "main")
        return key
    }()

    /// Logs in; also says whether the completion ran on the main queue.
    static func logIn(_ login: BiometricLogin) async -> (BiometricLogin.State, Bool) {
        let key = mainQueueKey
        return await withCheckedContinuation { done in
            login.logIn { state in done.resume(returning: (state, DispatchQueue.getSpecific(key: key) == "main")) }
        }
    }

    @Test func completionHandlerStyle_whenEvaluationSucceeds_unlocksOnTheMainQueue() async {
        let fake = FakeContext()
        let login = BiometricLogin(context: fake)
        let (state, onMain) = await Self.logIn(login)
        #expect(state == .unlocked)
        #expect(onMain)
        #expect(fake.localizedCancelTitle == "Not Now")
        #expect(fake.touchIDAuthenticationAllowableReuseDuration == 300)
    }

    @Test func completionHandlerStyle_whenUserCancels_mapsTheLAErrorCode() async {
        let fake = FakeContext()
        fake.outcome = (false, LAError(.userCancel))
        let (state, _) = await Self.logIn(BiometricLogin(context: fake))
        #expect(state == .failed("You pressed cancel."))
    }

    @Test func nsErrorOutParameter_whenPolicyCannotBeEvaluated_isMappedByItsCode() async {
        let fake = FakeContext()
        fake.canEvaluate = false
        let (state, _) = await Self.logIn(BiometricLogin(context: fake))
        #expect(state == .failed("Biometry is not set up."))
    }

    @Test func realContext_whenDaemonIsUnreachable_failsBiometryNotAvailable() async {
        let login = BiometricLogin(context: Self.unreachableContext())
        let (state, onMain) = await Self.logIn(login)
        #expect(state == .failed("Biometry is not available."))
        #expect(onMain)
        #expect(login.loginButtonTitle == "Log In")
    }

    @Test func asyncStyleInATask_whenDaemonIsUnreachable_throwsLAError() async {
        let login = BiometricLogin(context: Self.unreachableContext())
        let state = await login.logInAsync().value
        #expect(state == .failed("Biometry is not available."))
    }

    @Test func asyncStyleInATask_afterLogOut_failsInvalidContext() async {
        let login = BiometricLogin(context: Self.unreachableContext())
        login.logOut()
        #expect(await login.logInAsync().value == .failed("The context is invalid."))
    }

    @Test func loginButtonTitle_namesTheBiometry() {
        let fake = FakeContext()
        #expect(BiometricLogin(context: fake).loginButtonTitle == "Log In with Touch ID")
        fake.fakeBiometryType = .faceID
        #expect(BiometricLogin(context: fake).loginButtonTitle == "Log In with Face ID")
    }

    @Test func messages_nameEveryLAErrorCode_howeverTheErrorArrives() {
        let codes: [LAError.Code] = [
            .authenticationFailed, .userCancel, .userFallback, .systemCancel, .passcodeNotSet, .biometryNotAvailable,
            .biometryNotEnrolled, .biometryLockout, .appCancel, .invalidContext, .companionNotAvailable,
            .biometryNotPaired, .biometryDisconnected, .invalidDimensions, .notInteractive,
        ]
        for code in codes {
            let typed = BiometricLogin.message(for: LAError(code))
            #expect(!typed.hasPrefix("Unknown"), "\(code)")
            // The same error as a plain NSError of LAErrorDomain.
            let untyped = BiometricLogin.message(for: NSError(domain: LAErrorDomain, code: code.rawValue))
            #expect(untyped == typed, "\(code)")
        }
        #expect(BiometricLogin.legacyMessage(forCode: -8) == "Locked out")
        #expect(BiometricLogin.legacyMessage(forCode: LAError.userCancel.rawValue) == "User cancelled")
    }

    /// The rights sample reaches no daemon here (none at the default socket): every call fails with
    /// an `LAError`, as Apple's does on a Mac without Touch ID.
    @Test func secretVault_withoutADaemon_failsWithLAError() async {
        setenv("LOCALAUTHD_SOCKET", "/nonexistent/localauthd.socket", 1)
        let vault = SecretVault()
        await #expect(throws: LAError.self) { _ = try await vault.load() }
        #expect(await vault.confirm() == false)
        let model = MechanismsModel()
        model.start()
        model.stop()
        #expect(model.summary == "", "no daemon, no mechanism: \(model.summary)")
        #expect(await unlockWithAppPassword("open sesame") == false)
    }
}
