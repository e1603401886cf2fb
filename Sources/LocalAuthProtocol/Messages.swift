// SPDX-License-Identifier: Apache-2.0

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

/// The options of an EVALUATE request (LAContext's properties that travel to the daemon).
public struct EvaluateOptions: Equatable, Sendable {
    public var policy: PolicyKind
    public var user: String?
    public var service: String?
    public var tty: String?
    public var reason: String?
    /// nil: the default title; "": no fallback offered.
    public var fallbackTitle: String?
    public var cancelTitle: String?
    public var flags: RequestFlags
    public var reuseSeconds: Int64
    public var tries: Int64
    public var timeoutMs: Int64

    public static let defaultTries: Int64 = 3
    public static let maxTries: Int64 = 5
    public static let defaultTimeoutMs: Int64 = 30_000
    public static let maxTimeoutMs: Int64 = 300_000
    public static let maxReuseSeconds: Int64 = 300

    public init(
        policy: PolicyKind, user: String? = nil, service: String? = nil, tty: String? = nil, reason: String? = nil,
        fallbackTitle: String? = nil, cancelTitle: String? = nil, flags: RequestFlags = [], reuseSeconds: Int64 = 0,
        tries: Int64 = EvaluateOptions.defaultTries, timeoutMs: Int64 = EvaluateOptions.defaultTimeoutMs
    ) {
        self.policy = policy
        self.user = user
        self.service = service
        self.tty = tty
        self.reason = reason
        self.fallbackTitle = fallbackTitle
        self.cancelTitle = cancelTitle
        self.flags = flags
        self.reuseSeconds = reuseSeconds
        self.tries = tries
        self.timeoutMs = timeoutMs
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
            f.append(.service, optionalString: o.service)
            f.append(.tty, optionalString: o.tty)
            // A person's text, however long the caller made it, is cut to fit the frame.
            if let reason = o.reason { f.append(.reason, text: reason) }
            if let title = o.fallbackTitle { f.append(.fallbackTitle, text: title) }
            if let title = o.cancelTitle { f.append(.cancelTitle, text: title) }
            if !o.flags.isEmpty { f.append(.flags, int: o.flags.rawValue) }
            if o.reuseSeconds != 0 { f.append(.reuseSeconds, int: o.reuseSeconds) }
            if o.tries != EvaluateOptions.defaultTries { f.append(.tries, int: o.tries) }
            if o.timeoutMs != EvaluateOptions.defaultTimeoutMs { f.append(.timeoutMs, int: o.timeoutMs) }
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
        func ranged(_ tag: FieldTag, default d: Int64, _ range: ClosedRange<Int64>) throws(RequestError) -> Int64 {
            try f.ranged(tag, default: d, range)
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
            self = .evaluate(
                EvaluateOptions(
                    policy: try policy(), user: f.string(.user), service: f.string(.service), tty: f.string(.tty),
                    reason: f.string(.reason), fallbackTitle: f.string(.fallbackTitle),
                    cancelTitle: f.string(.cancelTitle), flags: flags,
                    reuseSeconds: try ranged(.reuseSeconds, default: 0, 0...EvaluateOptions.maxReuseSeconds),
                    tries: try ranged(.tries, default: EvaluateOptions.defaultTries, 1...EvaluateOptions.maxTries),
                    timeoutMs: try ranged(
                        .timeoutMs, default: EvaluateOptions.defaultTimeoutMs, 1...EvaluateOptions.maxTimeoutMs)))
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

/// An EVENT frame.
public struct Event: Equatable, Sendable {
    public var kind: EventKind
    public var message: String
    public var stage: Int64?
    public var stages: Int64?
    public var triesLeft: Int64?
    public var delayMs: Int64?
    public var hint: RetryHint?
    public var finger: String?
    /// The `message` as a phrase (from daemons that send one, and that this client knows): render it
    /// in the person's language, else show `message`.
    public var phrase: Phrase?

    public init(
        _ kind: EventKind, _ message: String, stage: Int64? = nil, stages: Int64? = nil, triesLeft: Int64? = nil,
        delayMs: Int64? = nil, hint: RetryHint? = nil, finger: String? = nil, phrase: Phrase? = nil
    ) {
        self.kind = kind
        self.message = message
        self.phrase = phrase
        self.stage = stage
        self.stages = stages
        self.triesLeft = triesLeft
        self.delayMs = delayMs
        self.hint = hint
        self.finger = finger
    }

    public var frame: Frame {
        var f = Frame(.event)
        f.append(.event, int: kind.rawValue)
        f.append(.message, text: message)
        f.append(.stage, optionalInt: stage)
        f.append(.stages, optionalInt: stages)
        f.append(.triesLeft, optionalInt: triesLeft)
        f.append(.delayMs, optionalInt: delayMs)
        f.append(.hint, optionalInt: hint?.rawValue)
        f.append(.finger, optionalString: finger)
        if let value = phrase?.wireValue { f.append(.phrase, bytes: value) }
        return f
    }

    public init(frame f: Frame) throws(ProtocolError) {
        guard f.type == .event else { throw .unexpectedMessage(f.type) }
        guard let raw = f.int(.event) else { throw .malformed("EVENT without event") }
        // An event kind from a newer daemon is shown as plain information.
        self.init(
            EventKind(rawValue: raw) ?? .info, f.string(.message) ?? "", stage: f.int(.stage), stages: f.int(.stages),
            triesLeft: f.int(.triesLeft), delayMs: f.int(.delayMs),
            hint: f.int(.hint).flatMap(RetryHint.init(rawValue:)),
            finger: f.string(.finger), phrase: f.bytes(.phrase).flatMap { Phrase(wireValue: $0) })
    }
}

/// A RESULT frame: the code, the human line, and the fields particular to the request.
public struct RequestResult: Equatable, Sendable {
    /// The raw code; `resultCode` maps it when it is a known one.
    public var code: Int64
    public var message: String
    /// Further fields (finger, domainState, device, …) in wire order.
    public var extra: [Field]
    /// The `message` as a phrase (from daemons that send one, and that this client knows): render it
    /// in the person's language, else show `message`.
    public var phrase: Phrase?
    /// How the reader failed the request, for a door to say in its own words; not on the wire.
    public var readerFailure: ReaderFailure?

    /// A result whose line is a phrase: the English `message` and the phrase for the client's language.
    public init(_ code: ResultCode, _ phrase: Phrase, extra: [Field] = []) {
        self.init(code, phrase.english, extra: extra, phrase: phrase)
    }

    public init(
        _ code: ResultCode, _ message: String, extra: [Field] = [], phrase: Phrase? = nil,
        readerFailure: ReaderFailure? = nil
    ) {
        self.code = code.rawValue
        self.message = message
        self.extra = extra
        self.phrase = phrase
        self.readerFailure = readerFailure
    }

    public var resultCode: ResultCode? { ResultCode(rawValue: code) }
    public var isSuccess: Bool { code == 0 }

    public var frame: Frame {
        var f = Frame(.result)
        f.append(.code, int: code)
        f.append(.message, text: message)
        if let value = phrase?.wireValue { f.append(.phrase, bytes: value) }
        f.fields.append(contentsOf: extra)
        return f
    }

    public init(frame f: Frame) throws(ProtocolError) {
        guard f.type == .result else { throw .unexpectedMessage(f.type) }
        guard let code = f.int(.code) else { throw .malformed("RESULT without code") }
        self.code = code
        self.message = f.string(.message) ?? ""
        self.phrase = f.bytes(.phrase).flatMap { Phrase(wireValue: $0) }
        self.extra = f.fields.filter { $0.tag != .code && $0.tag != .message && $0.tag != .phrase }
    }

    /// The extra fields read as a frame, for the typed accessors.
    public var fields: Frame { Frame(.result, extra) }
}

/// One DEVICES entry, carried as a nested field list in `device`.
public struct DeviceInfo: Equatable, Sendable {
    public var name: String
    public var driver: String
    public var deviceId: String
    public var enrollStages: Int64
    public var capabilities: DeviceCapabilities

    public init(name: String, driver: String, deviceId: String, enrollStages: Int64, capabilities: DeviceCapabilities) {
        self.name = name
        self.driver = driver
        self.deviceId = deviceId
        self.enrollStages = enrollStages
        self.capabilities = capabilities
    }

    public var field: Field {
        var f = Frame(.result)
        // Bounded so that the nested list always fits one field.
        f.append(.name, string: Echo.truncated(name, maxBytes: 256))
        f.append(.driver, string: Echo.truncated(driver, maxBytes: 128))
        f.append(.deviceId, string: Echo.truncated(deviceId, maxBytes: 128))
        f.append(.enrollStages, int: enrollStages)
        f.append(.capabilities, int: capabilities.rawValue)
        return Field(tag: .device, value: Frame.encodeFields(f.fields))
    }

    public init(field: [UInt8]) throws(ProtocolError) {
        let f = Frame(.result, try Frame.decodeFields(field[...]))
        self.init(
            name: f.string(.name) ?? "", driver: f.string(.driver) ?? "", deviceId: f.string(.deviceId) ?? "",
            enrollStages: f.int(.enrollStages) ?? 0,
            capabilities: DeviceCapabilities(rawValue: f.int(.capabilities) ?? 0))
    }
}

/// Frames a daemon sends.
public enum ServerMessage: Equatable, Sendable {
    case welcome(version: Int64, server: String)
    case event(Event)
    case result(RequestResult)
    case error(code: Int64, message: String)

    public var frame: Frame {
        switch self {
        case .welcome(let version, let server):
            var f = Frame(.welcome)
            f.append(.version, int: version)
            f.append(.peerName, string: server)
            return f
        case .event(let e): return e.frame
        case .result(let r): return r.frame
        case .error(let code, let message):
            var f = Frame(.error)
            f.append(.code, int: code)
            f.append(.message, text: message)
            return f
        }
    }

    /// The frame's bytes, never trapping, for a daemon that builds replies from what clients
    /// sent. Text is cut to fit already (`Frame.append(_:text:)`); a RESULT whose other fields
    /// still break the limits becomes `internalError` saying so, and such an EVENT an `info`.
    public func encodedForWire() -> [UInt8] {
        if let bytes = try? frame.encode() { return bytes }
        switch self {
        case .event:
            return ServerMessage.event(Event(.info, "(an event too large to send was left out)")).frame.encoded()
        default:
            return ServerMessage.result(RequestResult(.internalError, "The reply was too large to send")).frame
                .encoded()
        }
    }

    public init(frame f: Frame) throws(ProtocolError) {
        switch f.type {
        case .welcome:
            guard let v = f.int(.version) else { throw .malformed("WELCOME without version") }
            self = .welcome(version: v, server: f.string(.peerName) ?? "")
        case .event: self = .event(try Event(frame: f))
        case .result: self = .result(try RequestResult(frame: f))
        case .error: self = .error(code: f.int(.code) ?? 0, message: f.string(.message) ?? "")
        default: throw .unknownMessage(f.type)
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
