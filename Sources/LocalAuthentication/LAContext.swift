// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthLocalization
import LocalAuthProtocol
import Observation

#if canImport(Glibc)
    import Glibc
#endif

/// A context for evaluating authentication policies: Apple's `LAContext`, answered by `localauthd`.
///
/// Every call opens its own connection to the daemon (`LOCALAUTHD_SOCKET`, else `/run/localauthd/socket`)
/// and authenticates the account of the calling process. A context may be used from several threads;
/// evaluations of one context run one after another on its private queue, where `reply` is called.
open class LAContext: NSObject, @unchecked Sendable {
    private let lock = NSLock()
    private let queue = DispatchQueue(label: "LocalAuthentication.LAContext")
    private var state = State()

    private struct State {
        var localizedReason = ""
        var localizedFallbackTitle: String?
        var localizedCancelTitle: String?
        var reuseDuration: TimeInterval = 0
        var interactionNotAllowed = false
        var linuxPrompt: LALinuxPrompt? = .terminal
        var applicationPassword: String?
        var biometryType: LABiometryType = .none
        var domainState: Data?
        var maxBiometryFailures: NSNumber?
        var invalidated = false
        var nextID = 0
        var running: [Int: (connection: DaemonConnection?, cancellation: Cancellation)] = [:]
        // For tests: another daemon than the default one, and a shorter request deadline.
        var socketPath: String?
        var timeoutMs: Int64 = 60_000
    }

    public override init() {
        super.init()
    }

    private func locked<T>(_ body: (inout State) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&state)
    }

    // MARK: Properties

    /// The reason shown when `evaluatePolicy` is given an empty one.
    open var localizedReason: String {
        get { locked { $0.localizedReason } }
        set { locked { $0.localizedReason = newValue } }
    }

    /// The title of the fallback the daemon offers after the first finger that does not match; nil for the
    /// default ("Enter password" / "Use passcode"), "" to offer none.
    open var localizedFallbackTitle: String? {
        get { locked { $0.localizedFallbackTitle } }
        set { locked { $0.localizedFallbackTitle = newValue } }
    }

    /// The title of the cancel action, shown in the prompt.
    open var localizedCancelTitle: String? {
        get { locked { $0.localizedCancelTitle } }
        set { locked { $0.localizedCancelTitle = newValue } }
    }

    /// How long a recent success of this program, for this user and login session, is reused without asking
    /// again; 0 (the default) never reuses, and more than
    /// `LATouchIDAuthenticationMaximumAllowableReuseDuration` counts as that maximum.
    open var touchIDAuthenticationAllowableReuseDuration: TimeInterval {
        get { locked { $0.reuseDuration } }
        set { locked { $0.reuseDuration = newValue } }
    }

    /// When true, an evaluation that would need the person fails with `notInteractive` instead of asking
    /// (a success inside the reuse window still counts).
    open var interactionNotAllowed: Bool {
        get { locked { $0.interactionNotAllowed } }
        set { locked { $0.interactionNotAllowed = newValue } }
    }

    /// The biometry of the device: `.none` until `canEvaluatePolicy(_:error:)` has been called, then
    /// `.touchID` when a fingerprint reader is present (whatever that call returned).
    open var biometryType: LABiometryType { locked { $0.biometryType } }

    /// Changes exactly when the user's enrolled fingers change. Set by a successful `canEvaluatePolicy`
    /// and by a successful evaluation; nil before, after a failed `canEvaluatePolicy`, and without fingers.
    open var evaluatedPolicyDomainState: Data? { locked { $0.domainState } }

    /// `evaluatedPolicyDomainState` in Apple's newer shape.
    open var domainState: LADomainState {
        locked {
            LADomainState(biometry: LADomainStateBiometry(biometryType: $0.biometryType, stateHash: $0.domainState))
        }
    }

    /// Apple's deprecated (macOS 10.11: "No longer supported") limit of failed matches: setting it has no
    /// effect, here as there. The daemon locks biometrics after 5 failed matches (`finger-attempts` of the
    /// configuration). Kept so old code compiles; it reads back what was set.
    // English: Apple's deprecation message, for the programmer's compiler.
    @available(*, deprecated, message: "No longer supported")
    open var maxBiometryFailures: NSNumber? {
        get { locked { $0.maxBiometryFailures } }
        set { locked { $0.maxBiometryFailures = newValue } }
    }

    /// Linux-only: the UI that stands in for Apple's system UI — the progress lines and the passcode
    /// question. `LALinuxPrompt.terminal` by default; nil for none (an evaluation that needs the passcode
    /// then fails with `notInteractive`).
    open var linuxPrompt: LALinuxPrompt? {
        get { locked { $0.linuxPrompt } }
        set { locked { $0.linuxPrompt = newValue } }
    }

    // For tests (`@testable import`).
    var socketPath: String? {
        get { locked { $0.socketPath } }
        set { locked { $0.socketPath = newValue } }
    }

    var requestTimeoutMs: Int64 {
        get { locked { $0.timeoutMs } }
        set { locked { $0.timeoutMs = newValue } }
    }

    // MARK: Credentials

    /// Sets (or, with nil, clears) the app's credential. `.applicationPassword`: the passcode this
    /// context gives the daemon when it asks for one, before (and instead of) asking the person; UTF-8,
    /// 4 to 256 bytes. Returns false for a credential that cannot be used (another type, not UTF-8).
    @discardableResult
    open func setCredential(_ credential: Data?, type: LACredentialType) -> Bool {
        guard type == .applicationPassword else { return false }
        guard let credential else {
            locked { $0.applicationPassword = nil }
            return true
        }
        guard let text = String(data: credential, encoding: .utf8), (4...256).contains(credential.count) else {
            return false
        }
        locked { $0.applicationPassword = text }
        return true
    }

    /// Whether a credential of `type` is set on this context.
    open func isCredentialSet(_ type: LACredentialType) -> Bool {
        type == .applicationPassword && locked { $0.applicationPassword != nil }
    }

    // MARK: Methods

    /// Whether `policy` can be evaluated now, without asking anyone. Sets `biometryType`, and
    /// `evaluatedPolicyDomainState` on success. On failure `error` (when given) holds an `LAError`'s
    /// `NSError`.
    @discardableResult
    open func canEvaluatePolicy(_ policy: LAPolicy, error: NSErrorPointer) -> Bool {
        switch preflight(policy) {
        case .success:
            error?.pointee = nil
            return true
        case .failure(let e):
            error?.pointee = e._nsError
            return false
        }
    }

    /// Evaluates `policy`: asks for a finger (and, for `deviceOwnerAuthentication`, the passcode when no
    /// finger can be used or the fingers fail). `reply` is called once, on the context's private queue.
    open func evaluatePolicy(
        _ policy: LAPolicy, localizedReason: String, reply: @escaping @Sendable (Bool, (any Error)?) -> Void
    ) {
        // Registered at once: an evaluation waiting for the queue is already in flight for invalidate().
        let cancellation = Cancellation()
        let (request, id): (Evaluation, Int?) = locked { s in
            let request = Evaluation(
                policy: policy, reason: localizedReason.isEmpty ? s.localizedReason : localizedReason,
                fallbackTitle: s.localizedFallbackTitle, cancelTitle: s.localizedCancelTitle,
                reuseSeconds: Self.reuseSeconds(s.reuseDuration), interactionNotAllowed: s.interactionNotAllowed,
                prompt: s.linuxPrompt, socketPath: s.socketPath ?? DaemonConnection.defaultSocketPath,
                timeoutMs: s.timeoutMs, applicationPassword: s.applicationPassword)
            guard !s.invalidated else { return (request, nil) }
            s.nextID += 1
            s.running[s.nextID] = (nil, cancellation)
            return (request, s.nextID)
        }
        queue.async { [self] in
            let outcome: Result<Void, LAError>
            if let id {
                outcome = evaluate(request, id: id, cancellation: cancellation)
                cancellation.cancel(byApp: false)
                _ = locked { $0.running.removeValue(forKey: id) }
            } else {
                outcome = .failure(LAError(.invalidContext, Self.invalidatedMessage))
            }
            switch outcome {
            case .success: reply(true, nil)
            case .failure(let error): reply(false, error)
            }
        }
    }

    /// Evaluates `policy`; returns true or throws an `LAError`.
    open func evaluatePolicy(_ policy: LAPolicy, localizedReason: String) async throws -> Bool {
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Bool, any Error>) in
            evaluatePolicy(policy, localizedReason: localizedReason) { success, error in
                if let error { done.resume(throwing: error) } else { done.resume(returning: success) }
            }
        }
    }

    /// Cancels every evaluation in flight (they fail with `appCancel`) and makes the context unusable:
    /// every later call fails with `invalidContext`.
    open func invalidate() {
        let running = locked { s in
            s.invalidated = true
            return Array(s.running.values)
        }
        for (connection, cancellation) in running {
            cancellation.cancel(byApp: true)
            connection?.interrupt()
        }
    }

    // MARK: Implementation

    private struct Evaluation {
        var policy: LAPolicy
        var reason: String
        var fallbackTitle: String?
        var cancelTitle: String?
        var reuseSeconds: Int64
        var interactionNotAllowed: Bool
        var prompt: LALinuxPrompt?
        var socketPath: String
        var timeoutMs: Int64
        var applicationPassword: String? = nil
    }

    static func reuseSeconds(_ duration: TimeInterval) -> Int64 {
        guard duration.isFinite, duration > 0 else { return 0 }
        return Int64(min(duration, LATouchIDAuthenticationMaximumAllowableReuseDuration))
    }

    /// The daemon's policy for Apple's; nil for a policy Linux cannot satisfy.
    static func daemonPolicy(_ policy: LAPolicy) -> PolicyKind? {
        switch policy {
        case .deviceOwnerAuthenticationWithBiometrics, .deviceOwnerAuthenticationWithBiometricsOrCompanion:
            .deviceOwnerAuthenticationWithBiometrics
        case .deviceOwnerAuthentication: .deviceOwnerAuthentication
        // Companion (raw value 3; its case is the deprecated `…WithWatch`).
        default: nil
        }
    }

    /// The protocol's `biometryType` (Apple's raw values: 0 none, 1 touchID; any other non-zero value is
    /// read as a fingerprint reader too, the only biometry the daemon knows) as Apple's type.
    static func biometryType(protocolValue: Int64?) -> LABiometryType {
        (protocolValue ?? 0) == 0 ? .none : .touchID
    }

    /// The `LAError` for a failed RESULT. The daemon's management codes have no `LAError` name; they
    /// surface as `systemCancel` with the daemon's code in the user info.
    static func error(for result: RequestResult) -> LAError {
        // The daemon's line in the person's language (its phrase), else its English message.
        let text = result.localizedMessage(style: phraseStyle)
        if let code = LAError.Code(rawValue: Int(result.code)) { return LAError(code, text) }
        return LAError(.systemCancel, text, daemonCode: result.code)
    }

    /// How the daemon's phrases are worded for an app: its name before the reason, as Apple shows it
    /// (`"vault" wants to unlock the vault: …`), and the localauth passcode as the fallback.
    static let phraseStyle = PhraseStyle(application: ProcessInfo.processInfo.processName)

    static let clientName = "LocalAuthentication (\(ProcessInfo.processInfo.processName))"
    /// The reuse window's scope: one program never reuses another's success (nor PAM's).
    static let service = "LAContext:" + ProcessInfo.processInfo.processName

    static var terminalName: String? {
        var buffer = [CChar](repeating: 0, count: 256)
        for fd: Int32 in [0, 1, 2] where isatty(fd) == 1 {
            if ttyname_r(fd, &buffer, buffer.count) == 0 {
                return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
        }
        return nil
    }

    /// What the prompt answers to the daemon's events during one request: shows the progress lines,
    /// asks for the passcode when asked, and — the terminal prompt — lets Esc and Enter press the cancel
    /// and fallback buttons while a finger is awaited (`keys`). Shared by `evaluatePolicy` and the rights.
    static func promptAnswerer(
        prompt: LALinuxPrompt?, reason: String, cancelTitle: String?, cancellation: Cancellation, keys: PromptKeys?,
        applicationPassword: String? = nil
    ) -> (Event) -> EventReply? {
        var asked = 0
        var credentialGiven = false
        var escapeShown = false
        return { event in
            let show = { (kind: LALinuxPromptMessage.Kind, text: String) in
                prompt?.show(LALinuxPromptMessage(kind: kind, text: text))
            }
            switch event.kind {
            case .passcodeNeeded:
                keys?.stop()  // the passcode is read from the same terminal
                // The app's credential answers the first question; a wrong one is counted as any
                // wrong passcode, and then the person is asked.
                if let applicationPassword, !credentialGiven {
                    credentialGiven = true
                    return .passcode(applicationPassword)
                }
                guard let prompt else { return .cancel }
                asked += 1
                let question = LALinuxPasscodeRequest(
                    text: event.localizedMessage(style: phraseStyle), localizedReason: reason,
                    localizedCancelTitle: cancelTitle,
                    attempt: asked, delay: Double(event.delayMs ?? 0) / 1000, cancellation: cancellation)
                guard let passcode = prompt.passcode(question) else { return .cancel }
                return .passcode(passcode)
            case .placeFinger:
                show(.placeFinger, event.localizedMessage(style: phraseStyle))
                if let keys {
                    if !escapeShown { show(.information, PromptText.pressEscape(cancelTitle)) }
                    escapeShown = true
                    keys.start()
                }
            case .retry: show(.retry, event.localizedMessage(style: phraseStyle))
            case .noMatch: show(.noMatch, event.localizedMessage(style: phraseStyle))
            case .biometryLocked: show(.biometryLocked, event.localizedMessage(style: phraseStyle))
            case .passcodeWrong: show(.passcodeWrong, event.localizedMessage(style: phraseStyle))
            case .info: show(.information, event.localizedMessage(style: phraseStyle))
            case .fallbackAvailable:
                // The event's message is the fallback's title; only the terminal has a key to press.
                if let keys {
                    keys.offerFallback()
                    show(.information, PromptText.pressEnter(event.localizedMessage(style: phraseStyle)))
                }
            case .enrollStage, .environmentChanged: break
            }
            return nil
        }
    }

    /// The terminal's keys for one request on `connection`, when the prompt has them.
    static func keys(for prompt: LALinuxPrompt?, connection: DaemonConnection) -> PromptKeys? {
        guard let prompt, prompt.pressesKeys else { return nil }
        return PromptKeys { key in
            try? connection.send(Frame(key == .cancel ? .cancel : .fallback))
        }
    }

    /// A client error in the person's language; anything else as it describes itself.
    static func describe(_ error: any Error) -> String {
        (error as? ClientError)?.text(Gettext.shared) ?? "\(error)"
    }

    static var invalidatedMessage: String { tr("The context was invalidated") }
    static var appCancelMessage: String { tr("Cancelled by the app") }
    static var noCompanionMessage: String { tr("No companion device is available on this system") }

    private func preflight(_ policy: LAPolicy) -> Result<Void, LAError> {
        let (invalidated, socketPath) = locked { ($0.invalidated, $0.socketPath) }
        if invalidated { return .failure(LAError(.invalidContext, Self.invalidatedMessage)) }
        let result: RequestResult
        do throws(ClientError) {
            let connection = try DaemonConnection(
                socketPath: socketPath ?? DaemonConnection.defaultSocketPath, clientName: Self.clientName)
            result = try connection.perform(
                .canEvaluate(policy: Self.daemonPolicy(policy) ?? .deviceOwnerAuthenticationWithBiometrics, user: nil),
                timeoutMs: 10_000)
        } catch {
            locked {
                $0.biometryType = .none
                $0.domainState = nil
            }
            return .failure(
                LAError(.biometryNotAvailable, tr("Fingerprint not available: %s", .text(Self.describe(error)))))
        }
        locked {
            $0.biometryType = Self.biometryType(protocolValue: result.fields.int(.biometryType))
            let usable = result.isSuccess && Self.daemonPolicy(policy) != nil
            $0.domainState = usable ? result.fields.bytes(.domainState).map { Data($0) } : nil
        }
        if Self.daemonPolicy(policy) == nil {
            return .failure(LAError(.companionNotAvailable, Self.noCompanionMessage))
        }
        return result.isSuccess ? .success(()) : .failure(Self.error(for: result))
    }

    /// One evaluation, on the private queue; `cancellation` is registered in `running`.
    private func evaluate(_ e: Evaluation, id: Int, cancellation: Cancellation) -> Result<Void, LAError> {
        if cancellation.isCancelledByApp { return .failure(LAError(.appCancel, Self.appCancelMessage)) }
        guard let kind = Self.daemonPolicy(e.policy) else {
            return .failure(LAError(.companionNotAvailable, Self.noCompanionMessage))
        }
        let prompt = e.prompt.flatMap { $0.isAvailable() ? $0 : nil }
        var flags: RequestFlags = []
        if e.interactionNotAllowed { flags.insert(.interactionNotAllowed) }
        if prompt != nil || e.applicationPassword != nil { flags.insert(.passcodeCapable) }

        let connection: DaemonConnection
        do {
            connection = try DaemonConnection(socketPath: e.socketPath, clientName: Self.clientName)
        } catch {
            return .failure(
                LAError(.biometryNotAvailable, tr("Fingerprint not available: %s", .text(Self.describe(error)))))
        }
        let attached = locked { s in
            guard !cancellation.isCancelled else { return false }
            s.running[id] = (connection, cancellation)
            return true
        }
        guard attached else { return .failure(LAError(.appCancel, Self.appCancelMessage)) }

        // The daemon ends the request at its deadline; a passcode prompt still waiting learns of it here.
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(e.timeoutMs))) {
            cancellation.cancel(byApp: false)
        }
        let options = EvaluateOptions(
            policy: kind, user: nil, service: Self.service, tty: Self.terminalName, reason: e.reason,
            fallbackTitle: e.fallbackTitle, cancelTitle: e.cancelTitle, flags: flags, reuseSeconds: e.reuseSeconds,
            timeoutMs: e.timeoutMs)
        let result: RequestResult
        do {
            let keys = Self.keys(for: prompt, connection: connection)
            defer { keys?.stop() }
            let answer = Self.promptAnswerer(
                prompt: prompt, reason: e.reason, cancelTitle: e.cancelTitle, cancellation: cancellation, keys: keys,
                applicationPassword: e.applicationPassword)
            result = try connection.perform(.evaluate(options), timeoutMs: e.timeoutMs + 10_000, onEvent: answer)
        } catch {
            if cancellation.isCancelledByApp { return .failure(LAError(.appCancel, Self.appCancelMessage)) }
            return .failure(LAError(.systemCancel, tr("The authentication ended: %s", .text(Self.describe(error)))))
        }
        guard result.isSuccess else { return .failure(Self.error(for: result)) }
        if let domain = result.fields.bytes(.domainState) {
            locked { $0.domainState = Data(domain) }
        }
        return .success(())
    }
}

/// Apple's overlay makes `LAContext` `Observable` (macOS 13 / iOS 18), for SwiftUI; it does not document
/// which properties publish changes, and none does here: the conformance is for code that needs the type.
extension LAContext: Observable {}
