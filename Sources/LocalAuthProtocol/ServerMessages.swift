// SPDX-License-Identifier: Apache-2.0

// The frames a daemon sends: WELCOME, EVENT, RESULT (and a DEVICES entry within it), ERROR.

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

    /// A result whose line is a phrase: the English `message` and the phrase for the client's language.
    public init(_ code: ResultCode, _ phrase: Phrase, extra: [Field] = []) {
        self.init(code, phrase.english, extra: extra, phrase: phrase)
    }

    public init(
        _ code: ResultCode, _ message: String, extra: [Field] = [], phrase: Phrase? = nil
    ) {
        self.code = code.rawValue
        self.message = message
        self.extra = extra
        self.phrase = phrase
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
    /// The answer to REQUESTER: send the one byte that carries the pidfd now.
    case descriptorWanted

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
        case .descriptorWanted: return Frame(.descriptorWanted)
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
        case .descriptorWanted: self = .descriptorWanted
        default: throw .unknownMessage(f.type)
        }
    }
}
