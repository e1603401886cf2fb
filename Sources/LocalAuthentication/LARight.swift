// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthLocalization
import LocalAuthProtocol

/// What a right asks of the person: Apple's `LAAuthenticationRequirement`.
open class LAAuthenticationRequirement: NSObject, @unchecked Sendable {
    let wire: RightRequirement

    init(_ wire: RightRequirement) {
        self.wire = wire
        super.init()
    }

    /// A finger, or the passcode (`biometry(fallback: .devicePasscode)`).
    open class var `default`: LAAuthenticationRequirement { LAAuthenticationRequirement(.biometryOrPasscode) }
    /// Any enrolled finger.
    open class var biometry: LAAuthenticationRequirement { LAAuthenticationRequirement(.biometryAny) }
    /// A finger of the set enrolled when the right was saved; the right is destroyed when the set changes.
    open class var biometryCurrentSet: LAAuthenticationRequirement { LAAuthenticationRequirement(.biometryCurrentSet) }
    /// A finger, or what `fallback` asks for.
    open class func biometry(fallback: LABiometryFallbackRequirement) -> LAAuthenticationRequirement {
        LAAuthenticationRequirement(fallback.passcode ? .biometryOrPasscode : .biometryAny)
    }

    open override func isEqual(_ object: Any?) -> Bool {
        (object as? LAAuthenticationRequirement)?.wire == wire
    }
    open override var hash: Int { wire.hashValue }
}

/// What a right falls back to when no finger can be used: Apple's `LABiometryFallbackRequirement`.
open class LABiometryFallbackRequirement: NSObject, @unchecked Sendable {
    let passcode: Bool
    init(passcode: Bool) {
        self.passcode = passcode
        super.init()
    }
    /// The default fallback: the passcode (Linux's only one).
    open class var `default`: LABiometryFallbackRequirement { LABiometryFallbackRequirement(passcode: true) }
    /// The user's passcode (`localauthctl passcode set`).
    open class var devicePasscode: LABiometryFallbackRequirement { LABiometryFallbackRequirement(passcode: true) }
}

/// A grouped set of requirements that gate access to a resource or operation: Apple's `LARight`.
///
/// `authorize(localizedReason:)` asks the person (through the daemon, with the context's terminal
/// prompt) and sets `state`; `deauthorize()` drops it.
open class LARight: NSObject, @unchecked Sendable {
    /// Apple's `LARight.State`.
    public enum State: Int, Sendable {
        case unknown = 0
        case authorizing = 1
        case authorized = 2
        case notAuthorized = 3
    }

    let lock = NSLock()
    private var currentState = State.unknown
    /// An app's own mark; not used by the framework.
    open var tag: Int = 0
    let requirement: LAAuthenticationRequirement
    /// For tests: another daemon than the default one.
    var socketPath: String?
    /// Linux-only: the prompt used while authorizing (the terminal by default).
    open var linuxPrompt: LALinuxPrompt? = .terminal

    /// A right that asks for a finger or the passcode.
    public override convenience init() { self.init(requirement: .default) }

    public init(requirement: LAAuthenticationRequirement) {
        self.requirement = requirement
        super.init()
    }

    open var state: State { lock.withLock { currentState } }

    func setState(_ state: State) { lock.withLock { currentState = state } }

    var socket: String { socketPath ?? DaemonConnection.defaultSocketPath }

    /// Asks the person; throws an `LAError` when they do not (or cannot) give what the right requires.
    open func authorize(localizedReason: String) async throws {
        setState(.authorizing)
        do {
            try await performAuthorization(localizedReason: localizedReason)
            setState(.authorized)
        } catch {
            setState(.notAuthorized)
            throw error
        }
    }

    /// Whether `authorize` could succeed now, without asking anyone.
    open func checkCanAuthorize() async throws {
        let policy = requirement.wire.policy
        let result = try await RightChannel(socket: socket).perform(.canEvaluate(policy: policy, user: nil))
        guard result.isSuccess else { throw LAContext.error(for: result) }
    }

    /// Forgets the authorization (and, for a persisted right, the secret it released).
    open func deauthorize() async {
        setState(.unknown)
    }

    // Apple's completion-handler forms: each runs its async form and calls `handler` on a private queue.

    /// Asks the person; `handler` gets nil when the right is authorized, else the `LAError`.
    open func authorize(localizedReason: String, completion handler: @escaping @Sendable ((any Error)?) -> Void) {
        Completion.run(handler) { try await self.authorize(localizedReason: localizedReason) }
    }

    /// Whether `authorize` could succeed now, without asking anyone: `handler` gets nil when it could.
    open func checkCanAuthorize(completion handler: @escaping @Sendable ((any Error)?) -> Void) {
        Completion.run(handler) { try await self.checkCanAuthorize() }
    }

    /// Forgets the authorization, then calls `handler`.
    open func deauthorize(completion handler: @escaping @Sendable () -> Void) {
        Task.detached {
            await self.deauthorize()
            handler()
        }
    }

    func performAuthorization(localizedReason: String) async throws {
        let options = EvaluateOptions(
            policy: requirement.wire.policy, service: LAContext.service, tty: LAContext.terminalName,
            reason: localizedReason, flags: linuxPrompt?.isAvailable() == true ? [.passcodeCapable] : [],
            timeoutMs: 60_000)
        let result = try await RightChannel(socket: socket, prompt: linuxPrompt).perform(
            .evaluate(options), reason: localizedReason)
        guard result.isSuccess else { throw LAContext.error(for: result) }
    }
}

/// A right kept by the daemon, with its secret and private key: Apple's `LAPersistedRight`.
/// Obtained only from `LARightStore`.
open class LAPersistedRight: LARight, @unchecked Sendable {
    let identifier: String
    /// The key; its private half never leaves the daemon.
    public let key: LAPrivateKey
    /// The secret saved with the right.
    public let secret: LASecret

    init(identifier: String, requirement: LAAuthenticationRequirement, publicKey: [UInt8], socketPath: String?) {
        self.identifier = identifier
        let channel = RightChannel(socket: socketPath ?? DaemonConnection.defaultSocketPath)
        key = LAPrivateKey(identifier: identifier, publicKey: LAPublicKey(bytes: publicKey), channel: channel)
        secret = LASecret(identifier: identifier, channel: channel)
        super.init(requirement: requirement)
        self.socketPath = socketPath
        key.owner = self
        secret.owner = self
    }

    /// Asks the person, in a request that also releases the secret (kept until `deauthorize`).
    override func performAuthorization(localizedReason: String) async throws {
        let data = try await secret.channel.use(
            RightUseOptions(identifier: identifier, operation: .authorize), right: self, reason: localizedReason)
        secret.remember(data)
    }

    /// Forgets the secret and tells the daemon this process no longer holds the authorization (its
    /// key operations would otherwise run without asking again, `RightGrants`).
    open override func deauthorize() async {
        secret.remember(nil)
        await super.deauthorize()
        _ = try? await secret.channel.perform(
            .rightUse(RightUseOptions(identifier: identifier, operation: .deauthorize)))
    }

    /// A right released while authorized drops its authorization, as on Apple's systems.
    deinit {
        guard state == .authorized else { return }
        let channel = secret.channel
        let options = RightUseOptions(identifier: identifier, operation: .deauthorize)
        Task.detached { _ = try? await channel.perform(.rightUse(options)) }
    }
}

/// The secret of a persisted right: Apple's `LASecret`.
open class LASecret: NSObject, @unchecked Sendable {
    let identifier: String
    let channel: RightChannel
    weak var owner: LAPersistedRight?
    private let lock = NSLock()
    private var released: [UInt8]?

    init(identifier: String, channel: RightChannel) {
        self.identifier = identifier
        self.channel = channel
        super.init()
    }

    func remember(_ data: [UInt8]?) { lock.withLock { released = data } }

    /// The secret: Apple's async form of `loadData(completion:)` (`try await right.secret.rawData`).
    open var rawData: Data {
        get async throws { try await load() }
    }

    /// Hands the secret, or the `LAError` that kept it, to `handler`.
    open func loadData(completion handler: @escaping @Sendable (Data?, (any Error)?) -> Void) {
        Completion.run(handler) { try await self.load() }
    }

    /// The secret, as Apple's: available only while the owning right is authorized. The right's
    /// `authorize` released it (one request: the daemon evaluates the requirement and returns the
    /// secret); reading it asks no one. Not authorized (never, denied, or after `deauthorize`): an
    /// `LAError` `notInteractive`, as reading a secret never asks the person.
    func load() async throws -> Data {
        guard let owner else { throw LAError(.invalidContext, RightText.rightGone) }
        guard owner.state == .authorized, let data = lock.withLock({ released }) else {
            throw LAError(.notInteractive, RightText.notAuthorized)
        }
        guard !data.isEmpty else { throw LAError(.invalidContext, RightText.noSecret) }
        return Data(data)
    }
}

/// The store of persisted rights: Apple's `LARightStore`, kept by `localauthd` for the calling account.
open class LARightStore: NSObject, @unchecked Sendable {
    private static let sharedStore = LARightStore()

    /// The store of the calling account.
    open class var shared: LARightStore { sharedStore }

    /// For tests: another daemon than the default one.
    let socketPath: String?

    init(socketPath: String? = nil) {
        self.socketPath = socketPath
        super.init()
    }

    private var channel: RightChannel { RightChannel(socket: socketPath ?? DaemonConnection.defaultSocketPath) }

    /// The right saved under `identifier`. None (or a `biometryCurrentSet` right whose fingers have
    /// changed since): an `LAError` whose user info carries the daemon's `notFound` (−1102).
    open func right(forIdentifier identifier: String) async throws -> LAPersistedRight {
        let result = try await channel.perform(.rightGet(user: nil, identifier: identifier))
        guard result.isSuccess else { throw LAContext.error(for: result) }
        return persisted(identifier, result)
    }

    /// Saves `right` under `identifier` with a fresh key and no secret.
    open func saveRight(_ right: LARight, identifier: String) async throws -> LAPersistedRight {
        try await save(right, identifier: identifier, secret: nil)
    }

    /// Saves `right` under `identifier` with a fresh key and `secret` (at most 1024 bytes).
    open func saveRight(_ right: LARight, identifier: String, secret: Data) async throws -> LAPersistedRight {
        try await save(right, identifier: identifier, secret: Array(secret))
    }

    /// Removes a persisted right (its key and secret are destroyed).
    open func removeRight(_ right: LAPersistedRight) async throws {
        try await removeRight(forIdentifier: right.identifier)
    }

    open func removeRight(forIdentifier identifier: String) async throws {
        let result = try await channel.perform(.rightRemove(user: nil, identifier: identifier))
        guard result.isSuccess else { throw LAContext.error(for: result) }
    }

    /// Removes every right of the calling account.
    open func removeAllRights() async throws {
        let result = try await channel.perform(.rightRemove(user: nil, identifier: nil))
        guard result.isSuccess else { throw LAContext.error(for: result) }
    }

    // Apple's completion-handler forms: each runs its async form and calls `handler` on a private queue.

    open func right(
        forIdentifier identifier: String,
        completion handler: @escaping @Sendable (LAPersistedRight?, (any Error)?) -> Void
    ) {
        Completion.run(handler) { try await self.right(forIdentifier: identifier) }
    }

    open func saveRight(
        _ right: LARight, identifier: String,
        completion handler: @escaping @Sendable (LAPersistedRight?, (any Error)?) -> Void
    ) {
        Completion.run(handler) { try await self.saveRight(right, identifier: identifier) }
    }

    open func saveRight(
        _ right: LARight, identifier: String, secret: Data,
        completion handler: @escaping @Sendable (LAPersistedRight?, (any Error)?) -> Void
    ) {
        Completion.run(handler) { try await self.saveRight(right, identifier: identifier, secret: secret) }
    }

    open func removeRight(_ right: LAPersistedRight, completion handler: @escaping @Sendable ((any Error)?) -> Void) {
        Completion.run(handler) { try await self.removeRight(right) }
    }

    open func removeRight(
        forIdentifier identifier: String, completion handler: @escaping @Sendable ((any Error)?) -> Void
    ) {
        Completion.run(handler) { try await self.removeRight(forIdentifier: identifier) }
    }

    open func removeAllRights(completion handler: @escaping @Sendable ((any Error)?) -> Void) {
        Completion.run(handler) { try await self.removeAllRights() }
    }

    private func save(_ right: LARight, identifier: String, secret: [UInt8]?) async throws -> LAPersistedRight {
        let result = try await channel.perform(
            .rightSave(user: nil, identifier: identifier, requirement: right.requirement.wire, secret: secret))
        guard result.isSuccess else { throw LAContext.error(for: result) }
        return persisted(identifier, result)
    }

    private func persisted(_ identifier: String, _ result: RequestResult) -> LAPersistedRight {
        let wire = result.fields.int(.requirement).flatMap(RightRequirement.init(rawValue:)) ?? .biometryOrPasscode
        return LAPersistedRight(
            identifier: identifier, requirement: LAAuthenticationRequirement(wire),
            publicKey: result.fields.bytes(.publicKey) ?? [], socketPath: socketPath)
    }
}

/// One request to the daemon at a time, off the caller's thread, with the right's prompt.
struct RightChannel: Sendable {
    let socket: String
    var prompt: LALinuxPrompt? = nil

    /// Runs `request` on a fresh connection; events go to the prompt.
    func perform(_ request: Request, reason: String = "") async throws -> RequestResult {
        let socket = self.socket
        let prompt = self.prompt
        return try await withCheckedThrowingContinuation {
            (done: CheckedContinuation<RequestResult, any Error>) in
            DispatchQueue.global().async {
                let cancellation = Cancellation()
                defer { cancellation.cancel(byApp: false) }
                do {
                    let connection = try DaemonConnection(socketPath: socket, clientName: LAContext.clientName)
                    let usable = prompt.flatMap { $0.isAvailable() ? $0 : nil }
                    let keys = LAContext.keys(for: usable, connection: connection)
                    let answer = LAContext.promptAnswerer(
                        prompt: usable, reason: reason, cancelTitle: nil, cancellation: cancellation, keys: keys)
                    let result = Result { try connection.perform(request, timeoutMs: 330_000, onEvent: answer) }
                    // The terminal is the app's again before it hears the answer (it may read it next).
                    keys?.stop()
                    done.resume(returning: try result.get())
                } catch {
                    done.resume(
                        throwing: LAError(
                            .biometryNotAvailable, tr("Fingerprint not available: %s", .text(LAContext.describe(error)))
                        ))
                }
            }
        }
    }

    /// A RIGHT_USE with the right's prompt; the data on success, the `LAError` otherwise.
    func use(_ options: RightUseOptions, right: LARight, reason: String) async throws -> [UInt8] {
        var options = options
        options.service = LAContext.service
        options.tty = LAContext.terminalName
        options.reason = reason
        if let prompt = right.linuxPrompt, prompt.isAvailable() { options.flags.insert(.passcodeCapable) }
        options.timeoutMs = 60_000
        var channel = self
        channel.prompt = right.linuxPrompt
        let result = try await channel.perform(.rightUse(options), reason: reason)
        guard result.isSuccess else { throw LAContext.error(for: result) }
        return result.fields.bytes(.data) ?? []
    }
}

/// Apple's completion-handler forms over the async ones: the work runs off the caller's thread and the
/// handler is called once, from a task of the global executor (Apple calls it on a private queue).
enum Completion {
    static func run<T: Sendable>(
        _ handler: @escaping @Sendable (T?, (any Error)?) -> Void, _ body: @escaping @Sendable () async throws -> T
    ) {
        Task.detached {
            do { handler(try await body(), nil) } catch { handler(nil, error) }
        }
    }

    static func run(
        _ handler: @escaping @Sendable ((any Error)?) -> Void, _ body: @escaping @Sendable () async throws -> Void
    ) {
        Task.detached {
            do {
                try await body()
                handler(nil)
            } catch { handler(error) }
        }
    }
}

/// The library's own lines about rights, in one place.
enum RightText {
    static var rightGone: String { tr("The right this belongs to no longer exists") }
    // TRANSLATORS: an app read an LARight's secret (LASecret) before authorizing the right.
    static var notAuthorized: String { tr("The right is not authorized: authorize it before reading its secret") }
    static var keyNotAuthorized: String {
        // TRANSLATORS: an app used an LARight's private key (LAPrivateKey) before authorizing the right.
        tr("The right is not authorized: authorize it before using its private key")
    }
    // TRANSLATORS: an app read the secret (LASecret) of an LARight saved without one.
    static var noSecret: String { tr("This right was saved without a secret") }
    // TRANSLATORS: the reason shown when an app uses an LARight's key without giving one.
    static var useKeyReason: String { tr("Use a private key") }
}
