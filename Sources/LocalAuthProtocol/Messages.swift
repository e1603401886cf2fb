// SPDX-License-Identifier: Apache-2.0

// The frames a client sends: HELLO and the requests, each read from its frame as the daemon does.

/// HELLO: the first frame of every connection.
public struct Hello: Equatable, Sendable {
    public var version: Int64
    public var client: String
    public init(version: Int64 = Wire.version, client: String) {
        self.version = version
        self.client = client
    }
    public var frame: Frame {
        var f = Frame(.hello)
        f.append(.version, int: version)
        f.append(.peerName, string: client)
        return f
    }
    public init(frame: Frame) throws(ProtocolError) {
        guard frame.type == .hello else { throw .unexpectedMessage(frame.type) }
        guard let version = frame.int(.version) else { throw .malformed("HELLO without version") }
        self.init(version: version, client: frame.string(.peerName) ?? "")
    }
}

/// What an evaluation tells the person and how long it tries: the part of EVALUATE that RIGHT_USE
/// shares (a right's use evaluates its requirement with these), written to and read from a frame
/// in one place.
public struct PromptOptions: Equatable, Sendable {
    public var service: String?
    public var tty: String?
    public var reason: String?
    /// nil: the default title; "": no fallback offered.
    public var fallbackTitle: String?
    public var cancelTitle: String?
    public var flags: RequestFlags
    public var tries: Int64
    public var timeoutMs: Int64

    public init(
        service: String? = nil, tty: String? = nil, reason: String? = nil, fallbackTitle: String? = nil,
        cancelTitle: String? = nil, flags: RequestFlags = [], tries: Int64 = EvaluateOptions.defaultTries,
        timeoutMs: Int64 = EvaluateOptions.defaultTimeoutMs
    ) {
        self.service = service
        self.tty = tty
        self.reason = reason
        self.fallbackTitle = fallbackTitle
        self.cancelTitle = cancelTitle
        self.flags = flags
        self.tries = tries
        self.timeoutMs = timeoutMs
    }

    init(frame f: Frame) throws(RequestError) {
        self.init(
            service: f.string(.service), tty: f.string(.tty), reason: f.string(.reason),
            fallbackTitle: f.string(.fallbackTitle), cancelTitle: f.string(.cancelTitle),
            flags: RequestFlags(rawValue: f.int(.flags) ?? 0),
            tries: try f.ranged(.tries, default: EvaluateOptions.defaultTries, 1...EvaluateOptions.maxTries),
            timeoutMs: try f.ranged(
                .timeoutMs, default: EvaluateOptions.defaultTimeoutMs, 1...EvaluateOptions.maxTimeoutMs))
    }

    /// Who asks, what the person reads, the flags. A person's text, however long the caller made
    /// it, is cut to fit the frame.
    func appendText(to f: inout Frame) {
        f.append(.service, optionalString: service)
        f.append(.tty, optionalString: tty)
        if let reason { f.append(.reason, text: reason) }
        if let fallbackTitle { f.append(.fallbackTitle, text: fallbackTitle) }
        if let cancelTitle { f.append(.cancelTitle, text: cancelTitle) }
        if !flags.isEmpty { f.append(.flags, int: flags.rawValue) }
    }

    /// The tries and the time limit, when not the defaults (after the request's own fields: the
    /// fields stand in the order of their tags).
    func appendLimits(to f: inout Frame) {
        if tries != EvaluateOptions.defaultTries { f.append(.tries, int: tries) }
        if timeoutMs != EvaluateOptions.defaultTimeoutMs { f.append(.timeoutMs, int: timeoutMs) }
    }
}

/// The options of an EVALUATE request (LAContext's properties that travel to the daemon). The
/// prompt's options read as its own (`options.reason`).
@dynamicMemberLookup
public struct EvaluateOptions: Equatable, Sendable {
    public var policy: PolicyKind
    public var user: String?
    public var prompt: PromptOptions
    public var reuseSeconds: Int64

    public static let defaultTries: Int64 = 3
    public static let maxTries: Int64 = 5
    public static let defaultTimeoutMs: Int64 = 30_000
    public static let maxTimeoutMs: Int64 = 300_000
    public static let maxReuseSeconds: Int64 = 300

    public init(policy: PolicyKind, user: String? = nil, prompt: PromptOptions, reuseSeconds: Int64 = 0) {
        self.policy = policy
        self.user = user
        self.prompt = prompt
        self.reuseSeconds = reuseSeconds
    }

    public init(
        policy: PolicyKind, user: String? = nil, service: String? = nil, tty: String? = nil, reason: String? = nil,
        fallbackTitle: String? = nil, cancelTitle: String? = nil, flags: RequestFlags = [], reuseSeconds: Int64 = 0,
        tries: Int64 = EvaluateOptions.defaultTries, timeoutMs: Int64 = EvaluateOptions.defaultTimeoutMs
    ) {
        self.init(
            policy: policy, user: user,
            prompt: PromptOptions(
                service: service, tty: tty, reason: reason, fallbackTitle: fallbackTitle, cancelTitle: cancelTitle,
                flags: flags, tries: tries, timeoutMs: timeoutMs), reuseSeconds: reuseSeconds)
    }

    public subscript<Value>(dynamicMember path: WritableKeyPath<PromptOptions, Value>) -> Value {
        get { prompt[keyPath: path] }
        set { prompt[keyPath: path] = newValue }
    }
}

/// A request: what a client may send after HELLO, outside a running operation.
public enum Request: Equatable, Sendable {
    case status(user: String?)
    case canEvaluate(policy: PolicyKind, user: String?)
    case evaluate(EvaluateOptions)
    /// `passcodeCapable`: the client can answer `passcodeNeeded` when the daemon asks for proof of presence.
    case enroll(user: String?, finger: FingerName?, passcodeCapable: Bool = false)
    case list(user: String?)
    case delete(user: String?, finger: FingerName?, all: Bool)
    case devices
    case simulate(action: String, argument: String?)
    case passcodeSet(user: String?, passcode: String, oldPasscode: String?)
    case passcodeRemove(user: String?, oldPasscode: String?)
    case lockoutReset(user: String)
    /// Saves a new right (a fresh P-256 key, and the secret when given) for an app's identifier.
    case rightSave(user: String?, identifier: String, requirement: RightRequirement, secret: [UInt8]?)
    /// A right's public part: its requirement and public key. No evaluation.
    case rightGet(user: String?, identifier: String)
    /// Removes one right, or (identifier nil, flag `all`) every right of the account.
    case rightRemove(user: String?, identifier: String?)
    /// Evaluates a right's requirement and uses the right in the same request.
    case rightUse(RightUseOptions)
    /// The account's password just succeeded in the PAM stack of `service` (never the password itself).
    case passwordUsed(user: String?, service: String?)
    /// Imports the prints fprintd stored under `from` (the daemon's `fprintd-state-dir` when nil).
    case importFprintd(from: String?)

    /// The account the request is about, when it names one.
    public var user: String? {
        switch self {
        case .status(let u), .canEvaluate(_, let u), .enroll(let u, _, _), .list(let u), .delete(let u, _, _),
            .passcodeSet(let u, _, _), .passcodeRemove(let u, _):
            u
        case .evaluate(let o): o.user
        case .lockoutReset(let u): u
        case .rightSave(let u, _, _, _), .rightGet(let u, _), .rightRemove(let u, _): u
        case .rightUse(let o): o.user
        case .passwordUsed(let u, _): u
        case .devices, .simulate, .importFprintd: nil
        }
    }

    public var frame: Frame {
        switch self {
        case .status(let user):
            var f = Frame(.status)
            f.append(.user, optionalString: user)
            return f
        case .canEvaluate(let policy, let user):
            var f = Frame(.canEvaluate)
            f.append(.policy, int: policy.rawValue)
            f.append(.user, optionalString: user)
            return f
        case .evaluate(let o):
            var f = Frame(.evaluate)
            f.append(.policy, int: o.policy.rawValue)
            f.append(.user, optionalString: o.user)
            o.prompt.appendText(to: &f)
            if o.reuseSeconds != 0 { f.append(.reuseSeconds, int: o.reuseSeconds) }
            o.prompt.appendLimits(to: &f)
            return f
        case .enroll(let user, let finger, let passcodeCapable):
            var f = Frame(.enroll)
            f.append(.user, optionalString: user)
            f.append(.finger, optionalString: finger?.rawValue)
            if passcodeCapable { f.append(.flags, int: RequestFlags.passcodeCapable.rawValue) }
            return f
        case .list(let user):
            var f = Frame(.list)
            f.append(.user, optionalString: user)
            return f
        case .delete(let user, let finger, let all):
            var f = Frame(.delete)
            f.append(.user, optionalString: user)
            f.append(.finger, optionalString: finger?.rawValue)
            if all { f.append(.flags, int: RequestFlags.all.rawValue) }
            return f
        case .devices:
            return Frame(.devices)
        case .simulate(let action, let argument):
            var f = Frame(.simulate)
            f.append(.action, string: action)
            f.append(.argument, optionalString: argument)
            return f
        case .passcodeSet(let user, let passcode, let old):
            var f = Frame(.passcodeSet)
            f.append(.user, optionalString: user)
            f.append(.passcode, string: passcode)
            f.append(.oldPasscode, optionalString: old)
            return f
        case .passcodeRemove(let user, let old):
            var f = Frame(.passcodeRemove)
            f.append(.user, optionalString: user)
            f.append(.oldPasscode, optionalString: old)
            return f
        case .lockoutReset(let user):
            var f = Frame(.lockoutReset)
            f.append(.user, string: user)
            return f
        case .rightSave, .rightGet, .rightRemove, .rightUse:
            return rightFrame!
        case .passwordUsed(let user, let service):
            var f = Frame(.passwordUsed)
            f.append(.user, optionalString: user)
            f.append(.service, optionalString: service)
            return f
        case .importFprintd(let from):
            var f = Frame(.importFprintd)
            f.append(.argument, optionalString: from)
            return f
        }
    }

    /// Parses a request frame. Range checks that need no daemon state happen here.
    public init(frame f: Frame) throws(RequestError) {
        func policy() throws(RequestError) -> PolicyKind {
            guard let raw = f.int(.policy) else { throw .missing(.policy) }
            guard let p = PolicyKind(rawValue: raw) else { throw .outOfRange(.policy, "\(raw) is not a policy") }
            return p
        }
        func finger() throws(RequestError) -> FingerName? {
            guard let name = f.string(.finger) else { return nil }
            guard let finger = FingerName(rawValue: name) else {
                throw .outOfRange(.finger, "\(Echo.quoted(name)) is not a finger name")
            }
            return finger
        }
        func required(_ tag: FieldTag) throws(RequestError) -> String {
            guard let s = f.string(tag) else { throw .missing(tag) }
            return s
        }
        let flags = RequestFlags(rawValue: f.int(.flags) ?? 0)
        switch f.type {
        case .status: self = .status(user: f.string(.user))
        case .canEvaluate: self = .canEvaluate(policy: try policy(), user: f.string(.user))
        case .evaluate:
            let policy = try policy()
            let reuseSeconds = try f.ranged(.reuseSeconds, default: 0, 0...EvaluateOptions.maxReuseSeconds)
            self = .evaluate(
                EvaluateOptions(
                    policy: policy, user: f.string(.user), prompt: try PromptOptions(frame: f),
                    reuseSeconds: reuseSeconds))
        case .enroll:
            self = .enroll(
                user: f.string(.user), finger: try finger(), passcodeCapable: flags.contains(.passcodeCapable))
        case .list: self = .list(user: f.string(.user))
        case .delete: self = .delete(user: f.string(.user), finger: try finger(), all: flags.contains(.all))
        case .devices: self = .devices
        case .simulate: self = .simulate(action: try required(.action), argument: f.string(.argument))
        case .passcodeSet:
            self = .passcodeSet(
                user: f.string(.user), passcode: try required(.passcode), oldPasscode: f.string(.oldPasscode))
        case .passcodeRemove: self = .passcodeRemove(user: f.string(.user), oldPasscode: f.string(.oldPasscode))
        case .lockoutReset: self = .lockoutReset(user: try required(.user))
        case .rightSave, .rightGet, .rightRemove, .rightUse: self = try Self.rightRequest(f)
        case .passwordUsed: self = .passwordUsed(user: f.string(.user), service: f.string(.service))
        case .importFprintd: self = .importFprintd(from: f.string(.argument))
        default: throw .notARequest(f.type)
        }
    }
}

/// Why a well-framed request was refused; answered with RESULT invalidRequest (not an ERROR).
public enum RequestError: Error, Equatable, Sendable, CustomStringConvertible {
    case missing(FieldTag)
    case outOfRange(FieldTag, String)
    case notARequest(MessageType)

    public var description: String {
        switch self {
        case .missing(let tag): "the request lacks \(tag)"
        case .outOfRange(let tag, let why): "\(tag): \(why)"
        case .notARequest(let type): "\(type) is not a request"
        }
    }
}

extension Frame {
    /// An int field within `range`, `d` when absent; a request with it outside is refused.
    func ranged(_ tag: FieldTag, default d: Int64, _ range: ClosedRange<Int64>) throws(RequestError) -> Int64 {
        guard let v = int(tag) else { return d }
        guard range.contains(v) else {
            throw .outOfRange(tag, "\(v) is outside \(range.lowerBound)…\(range.upperBound)")
        }
        return v
    }
}
