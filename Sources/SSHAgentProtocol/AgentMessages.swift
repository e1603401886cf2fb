// SPDX-License-Identifier: Apache-2.0

/// The ssh agent protocol (draft-miller-ssh-agent), the part an agent that holds only
/// finger-released ECDSA P-256 keys speaks: standard library only, no I/O.
///
/// A frame is a uint32 length and that many bytes: a message number and its contents. Frames are
/// bounded (`AgentFrameReader.maxFrame`); a frame that does not parse is answered with
/// `SSH_AGENT_FAILURE` and the connection serves on, as the draft asks.
public enum AgentMessageNumber: UInt8, Sendable {
    case failure = 5
    case success = 6
    case requestIdentities = 11
    case identitiesAnswer = 12
    case signRequest = 13
    case signResponse = 14
    case addIdentity = 17
    case removeIdentity = 18
    case removeAllIdentities = 19
    case addSmartcardKey = 20
    case removeSmartcardKey = 21
    case lock = 22
    case unlock = 23
    case addIdentityConstrained = 25
    case addSmartcardKeyConstrained = 26
    case extension_ = 27
    case extensionFailure = 28
}

/// A `session-bind@openssh.com` extension: the ssh client tells the agent which host the
/// connection is for, and whether the agent connection is a forwarded one (`ssh -A`).
public struct SessionBind: Equatable, Sendable {
    /// The server's host key blob (its SSH wire encoding).
    public var hostKey: [UInt8]
    public var sessionIdentifier: [UInt8]
    public var signature: [UInt8]
    public var isForwarding: Bool

    public init(hostKey: [UInt8], sessionIdentifier: [UInt8], signature: [UInt8], isForwarding: Bool) {
        self.hostKey = hostKey
        self.sessionIdentifier = sessionIdentifier
        self.signature = signature
        self.isForwarding = isForwarding
    }
}

/// What a client asks the agent.
public enum AgentRequest: Equatable, Sendable {
    case requestIdentities
    /// The key (its public blob), the data to sign, and the flags (RSA hash choices; ignored for ECDSA).
    case sign(keyBlob: [UInt8], data: [UInt8], flags: UInt32)
    case sessionBind(SessionBind)
    /// Any other extension, by name.
    case otherExtension(name: String)
    /// `ssh-add` of a key (with or without constraints): this agent holds none.
    case addIdentity(constrained: Bool)
    /// Any other message the agent knows by number but does not serve (remove, lock, smartcard).
    case unsupported(number: UInt8)
    /// A message number the draft does not define.
    case unknown(number: UInt8)

    public init(frame: [UInt8]) throws(AgentCodecError) {
        guard let number = frame.first else { throw .malformed("an empty message") }
        var r = SSHReader(frame[1...])
        switch AgentMessageNumber(rawValue: number) {
        case .requestIdentities?:
            try r.finish()
            self = .requestIdentities
        case .signRequest?:
            let key = try r.string()
            let data = try r.string()
            let flags = try r.uint32()
            try r.finish()
            self = .sign(keyBlob: key, data: data, flags: flags)
        case .extension_?:
            let name = try r.utf8()
            if name == "session-bind@openssh.com" {
                let hostKey = try r.string()
                let session = try r.string()
                let signature = try r.string()
                let forwarding = try r.bool()
                try r.finish()
                self = .sessionBind(
                    SessionBind(
                        hostKey: hostKey, sessionIdentifier: session, signature: signature, isForwarding: forwarding))
            } else {
                self = .otherExtension(name: name)
            }
        case .addIdentity?: self = .addIdentity(constrained: false)
        case .addIdentityConstrained?: self = .addIdentity(constrained: true)
        case .some(let known): self = .unsupported(number: known.rawValue)
        case nil: self = .unknown(number: number)
        }
    }

    /// The message's bytes without the length (the fuzz target and the tests re-encode with it).
    public var encoded: [UInt8] {
        var w = SSHWriter()
        switch self {
        case .requestIdentities: w.byte(AgentMessageNumber.requestIdentities.rawValue)
        case .sign(let key, let data, let flags):
            w.byte(AgentMessageNumber.signRequest.rawValue)
            w.string(key)
            w.string(data)
            w.uint32(flags)
        case .sessionBind(let bind):
            w.byte(AgentMessageNumber.extension_.rawValue)
            w.string(Array("session-bind@openssh.com".utf8))
            w.string(bind.hostKey)
            w.string(bind.sessionIdentifier)
            w.string(bind.signature)
            w.byte(bind.isForwarding ? 1 : 0)
        case .otherExtension(let name):
            w.byte(AgentMessageNumber.extension_.rawValue)
            w.string(Array(name.utf8))
        case .addIdentity(let constrained):
            w.byte(
                constrained
                    ? AgentMessageNumber.addIdentityConstrained.rawValue : AgentMessageNumber.addIdentity.rawValue)
        case .unsupported(let number), .unknown(let number): w.byte(number)
        }
        return w.bytes
    }
}

/// One identity in an `SSH_AGENT_IDENTITIES_ANSWER`.
public struct AgentIdentity: Equatable, Sendable {
    public var keyBlob: [UInt8]
    public var comment: String
    public init(keyBlob: [UInt8], comment: String) {
        self.keyBlob = keyBlob
        self.comment = comment
    }
}

/// What the agent answers.
public enum AgentResponse: Equatable, Sendable {
    case failure
    case success
    case identities([AgentIdentity])
    /// The SSH signature blob (`string algorithm, string signature`).
    case signature([UInt8])

    /// The whole frame, length included.
    public var frame: [UInt8] {
        var w = SSHWriter()
        switch self {
        case .failure: w.byte(AgentMessageNumber.failure.rawValue)
        case .success: w.byte(AgentMessageNumber.success.rawValue)
        case .identities(let ids):
            w.byte(AgentMessageNumber.identitiesAnswer.rawValue)
            w.uint32(UInt32(ids.count))
            for id in ids {
                w.string(id.keyBlob)
                w.string(Array(id.comment.utf8))
            }
        case .signature(let blob):
            w.byte(AgentMessageNumber.signResponse.rawValue)
            w.string(blob)
        }
        var f = SSHWriter()
        f.string(w.bytes)
        return f.bytes
    }

    /// Parses an answer (the tests' client side); `body` is the frame without its length.
    public init(body: [UInt8]) throws(AgentCodecError) {
        guard let number = body.first else { throw .malformed("an empty message") }
        var r = SSHReader(body[1...])
        switch AgentMessageNumber(rawValue: number) {
        case .failure?: self = .failure
        case .success?: self = .success
        case .identitiesAnswer?:
            let n = try r.uint32()
            var ids: [AgentIdentity] = []
            for _ in 0..<n {
                let blob = try r.string()
                ids.append(AgentIdentity(keyBlob: blob, comment: try r.utf8()))
            }
            self = .identities(ids)
        case .signResponse?: self = .signature(try r.string())
        default: throw .malformed("message \(number) is not an answer")
        }
        try r.finish()
    }
}

public enum AgentCodecError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformed(String)
    case frameTooLarge(Int)

    public var description: String {
        switch self {
        case .malformed(let why): "malformed agent message: \(why)"
        case .frameTooLarge(let n): "an agent frame of \(n) bytes is over the limit of \(AgentFrameReader.maxFrame)"
        }
    }
}

/// Splits a byte stream into frames: at most `maxFrame` bytes each (OpenSSH's own agent allows
/// 256 KiB). A frame over the limit is an error the connection does not survive: its length
/// cannot be trusted to find the next frame.
public struct AgentFrameReader: Sendable {
    public static let maxFrame = 256 * 1024
    private var buffer: [UInt8] = []

    public init() {}

    public mutating func append(_ bytes: some Collection<UInt8>) { buffer.append(contentsOf: bytes) }

    /// Bytes held that are not yet a whole frame.
    public var pending: Int { buffer.count }

    /// The next frame's body (number and contents), or nil until it is whole.
    public mutating func next() throws(AgentCodecError) -> [UInt8]? {
        guard buffer.count >= 4 else { return nil }
        let length = Int(buffer[0]) << 24 | Int(buffer[1]) << 16 | Int(buffer[2]) << 8 | Int(buffer[3])
        guard length <= Self.maxFrame else { throw .frameTooLarge(length) }
        guard buffer.count >= 4 + length else { return nil }
        let body = Array(buffer[4..<4 + length])
        buffer.removeFirst(4 + length)
        return body
    }
}
