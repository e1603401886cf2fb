// SPDX-License-Identifier: Apache-2.0

/// RIGHT_USE: evaluate a right's requirement and, in the same request, use the right. The
/// prompt's options read as its own (`options.reason`).
@dynamicMemberLookup
public struct RightUseOptions: Equatable, Sendable {
    public var user: String?
    public var identifier: String
    public var operation: RightOperation
    /// `KeyAlgorithm`'s raw value, for sign / decrypt / exchangeKeys.
    public var algorithm: String?
    /// The message to sign, the ciphertext, or the peer's public key.
    public var data: [UInt8]?
    /// exchangeKeys with an X9.63 KDF: the size wanted, and the shared info.
    public var requestedSize: Int64?
    public var sharedInfo: [UInt8]?
    public var prompt: PromptOptions

    public init(
        user: String? = nil, identifier: String, operation: RightOperation, algorithm: String? = nil,
        data: [UInt8]? = nil, requestedSize: Int64? = nil, sharedInfo: [UInt8]? = nil,
        prompt: PromptOptions = PromptOptions()
    ) {
        self.user = user
        self.identifier = identifier
        self.operation = operation
        self.algorithm = algorithm
        self.data = data
        self.requestedSize = requestedSize
        self.sharedInfo = sharedInfo
        self.prompt = prompt
    }

    public subscript<Value>(dynamicMember path: WritableKeyPath<PromptOptions, Value>) -> Value {
        get { prompt[keyPath: path] }
        set { prompt[keyPath: path] = newValue }
    }

    /// The evaluation that meets `requirement`: no reuse window, ever (a success must be the
    /// person's answer to this request).
    public func evaluation(for requirement: RightRequirement, user: String) -> EvaluateOptions {
        var prompt = prompt
        prompt.flags.subtract(.all)
        return EvaluateOptions(policy: requirement.policy, user: user, prompt: prompt, reuseSeconds: 0)
    }

    var frame: Frame {
        var f = Frame(.rightUse)
        f.append(.user, optionalString: user)
        f.append(.identifier, string: identifier)
        f.append(.operation, int: operation.rawValue)
        f.append(.algorithm, optionalString: algorithm)
        if let data { f.append(.data, bytes: data) }
        f.append(.requestedSize, optionalInt: requestedSize)
        if let sharedInfo { f.append(.sharedInfo, bytes: sharedInfo) }
        prompt.appendText(to: &f)
        prompt.appendLimits(to: &f)
        return f
    }
}

extension Request {
    static func rightRequest(_ f: Frame) throws(RequestError) -> Request {
        func identifier() throws(RequestError) -> String {
            guard let id = f.string(.identifier) else { throw .missing(.identifier) }
            guard (1...256).contains(id.utf8.count) else { throw .outOfRange(.identifier, "must be 1…256 bytes") }
            return id
        }
        let flags = RequestFlags(rawValue: f.int(.flags) ?? 0)
        switch f.type {
        case .rightSave:
            guard let raw = f.int(.requirement) else { throw .missing(.requirement) }
            guard let requirement = RightRequirement(rawValue: raw) else {
                throw .outOfRange(.requirement, "\(raw) is not a requirement")
            }
            return .rightSave(
                user: f.string(.user), identifier: try identifier(), requirement: requirement, secret: f.bytes(.secret))
        case .rightGet:
            return .rightGet(user: f.string(.user), identifier: try identifier())
        case .rightRemove:
            if flags.contains(.all) { return .rightRemove(user: f.string(.user), identifier: nil) }
            return .rightRemove(user: f.string(.user), identifier: try identifier())
        default:
            guard let raw = f.int(.operation) else { throw .missing(.operation) }
            guard let operation = RightOperation(rawValue: raw) else {
                throw .outOfRange(.operation, "\(raw) is not an operation")
            }
            let options = RightUseOptions(
                user: f.string(.user), identifier: try identifier(), operation: operation,
                algorithm: f.string(.algorithm), data: f.bytes(.data),
                requestedSize: try f.int(.requestedSize).map { _ throws(RequestError) in
                    try f.ranged(.requestedSize, default: 32, 1...1024)
                }, sharedInfo: f.bytes(.sharedInfo), prompt: try PromptOptions(frame: f))
            return .rightUse(options)
        }
    }

    var rightFrame: Frame? {
        switch self {
        case .rightSave(let user, let identifier, let requirement, let secret):
            var f = Frame(.rightSave)
            f.append(.user, optionalString: user)
            f.append(.identifier, string: identifier)
            f.append(.requirement, int: requirement.rawValue)
            if let secret { f.append(.secret, bytes: secret) }
            return f
        case .rightGet(let user, let identifier):
            var f = Frame(.rightGet)
            f.append(.user, optionalString: user)
            f.append(.identifier, string: identifier)
            return f
        case .rightRemove(let user, let identifier):
            var f = Frame(.rightRemove)
            f.append(.user, optionalString: user)
            if let identifier {
                f.append(.identifier, string: identifier)
            } else {
                f.append(.flags, int: RequestFlags.all.rawValue)
            }
            return f
        case .rightUse(let options): return options.frame
        default: return nil
        }
    }
}
