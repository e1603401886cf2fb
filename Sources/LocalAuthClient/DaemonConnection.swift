// SPDX-License-Identifier: Apache-2.0
import LocalAuthProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// Why talking to the daemon failed.
public enum ClientError: Error, Equatable, Sendable, CustomStringConvertible {
    case cannotConnect(path: String, errno: Int32)
    case untrustedDaemon(uid: UInt32)
    case protocolError(String)
    case refused(code: Int64, message: String)
    case disconnected
    case timedOut

    public var description: String { text(EnglishText()) }

    /// The line in `t`'s language (a client passes its gettext; `description` is the English).
    public func text(_ t: some Translator) -> String {
        switch self {
        case .cannotConnect(let path, let e):
            t.tr(
                "cannot reach localauthd at %1$s: %2$s (is the daemon running? LOCALAUTHD_SOCKET selects another socket)",
                .text(path), .text(String(cString: strerror(e))))
        case .untrustedDaemon(let uid):
            t.tr("the socket's owner (uid %d) is neither root nor you: not trusted", .number(Int64(uid)))
        case .protocolError(let why): t.tr("protocol error: %s", .text(why))
        case .refused(_, let message): t.tr("localauthd refused the connection: %s", .text(message))
        case .disconnected: t.tr("localauthd closed the connection")
        case .timedOut: t.tr("localauthd did not answer in time")
        }
    }
}

/// What a client answers to an event that asks for something.
public enum EventReply: Sendable {
    case passcode(String)
    case fallback
    case cancel
}

/// A blocking connection to localauthd: HELLO, then requests one at a time.
///
/// Every read is bounded by `poll` against a deadline. `interrupt()` may be called from another
/// thread to end a request in flight: it shuts the socket down, which the daemon sees as a cancel.
public final class DaemonConnection: @unchecked Sendable {
    /// `LOCALAUTHD_SOCKET`, else `/run/localauthd/socket`.
    public static var defaultSocketPath: String {
        if let env = getenv("LOCALAUTHD_SOCKET"), env.pointee != 0 { return String(cString: env) }
        return "/run/localauthd/socket"
    }

    let fd: Int32
    private var reader = FrameReader()
    public let serverName: String

    /// Connects and says HELLO. The daemon must run as root or as the caller's own uid.
    public init(socketPath: String = DaemonConnection.defaultSocketPath, clientName: String, timeoutMs: Int32 = 5000)
        throws(ClientError)
    {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .cannotConnect(path: socketPath, errno: errno) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(socketPath.utf8)
        guard pathBytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw .cannotConnect(path: socketPath, errno: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
            raw[pathBytes.count] = 0
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            let e = errno
            close(fd)
            throw .cannotConnect(path: socketPath, errno: e)
        }
        self.fd = fd
        self.serverName = ""
        // Every stored property is set: from here a throw releases the instance and `deinit` closes
        // `fd`. Closing it here as well closed the number twice, and the second close took whatever
        // another thread had opened under that number meanwhile (an app's file, another connection).
        let owner = try Self.peerUID(fd)
        guard owner == 0 || owner == getuid() else { throw .untrustedDaemon(uid: owner) }
        try send(Hello(client: clientName).frame)
        switch try receive(deadline: Self.now() + Int64(timeoutMs)) {
        case .welcome: break
        case .error(_, let message): throw .refused(code: -1, message: message)
        // English: a protocol detail
        default: throw .protocolError("expected WELCOME")
        }
    }

    deinit { Glibc.close(fd) }

    /// Shuts the socket down; a request in flight on another thread ends with `.disconnected`.
    public func interrupt() { shutdown(fd, Int32(SHUT_RDWR)) }

    /// Sends one request and reads events until its RESULT. `onEvent` answers events that ask.
    public func perform(
        _ request: Request, timeoutMs: Int64 = 330_000, onEvent: (Event) -> EventReply? = { _ in nil }
    ) throws(ClientError) -> RequestResult {
        try send(request.frame)
        let deadline = Self.now() + timeoutMs
        while true {
            switch try receive(deadline: deadline) {
            case .result(let result): return result
            case .event(let event):
                switch onEvent(event) {
                case .passcode(let passcode)?:
                    var f = Frame(.passcode)
                    f.append(.passcode, string: passcode)
                    try send(f)
                case .fallback?: try send(Frame(.fallback))
                case .cancel?: try send(Frame(.cancel))
                case nil: break
                }
            case .error(let code, let message): throw .refused(code: code, message: message)
            // English: a protocol detail
            case .welcome: throw .protocolError("unexpected WELCOME")
            // English: a protocol detail
            case .descriptorWanted: throw .protocolError("unexpected DESCRIPTOR_WANTED")
            }
        }
    }

    /// Sends a frame whole; a frame over the wire limits (a 2000-byte `--user`) is an error, not a trap.
    public func send(_ frame: Frame) throws(ClientError) {
        let bytes: [UInt8]
        do {
            bytes = try frame.encode()
        } catch {
            // English: a protocol detail
            throw .protocolError("the request is too large to send (\(error))")
        }
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .disconnected
            }
            offset += n
        }
    }

    /// The next server message, waiting at most until `deadline` (monotonic ms).
    public func receive(deadline: Int64) throws(ClientError) -> ServerMessage {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            do {
                if let frame = try reader.next() { return try ServerMessage(frame: frame) }
            } catch {
                throw .protocolError(error.description)
            }
            let remaining = deadline - Self.now()
            guard remaining > 0 else { throw .timedOut }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, Int32(min(remaining, Int64(Int32.max))))
            if ready < 0 {
                if errno == EINTR { continue }
                throw .disconnected
            }
            if ready == 0 { throw .timedOut }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw .disconnected
            }
            if n == 0 { throw .disconnected }
            reader.append(buffer[0..<n])
        }
    }

    /// Monotonic milliseconds.
    public static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    /// SO_PEERCRED's uid; `struct ucred` needs _GNU_SOURCE, so a layout-compatible struct is used.
    private static func peerUID(_ fd: Int32) throws(ClientError) -> UInt32 {
        var cred = (pid: Int32(0), uid: UInt32(0), gid: UInt32(0))
        var size = socklen_t(MemoryLayout.size(ofValue: cred))
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &size) == 0 else {
            // English: a protocol detail
            throw .protocolError("SO_PEERCRED failed: \(String(cString: strerror(errno)))")
        }
        return cred.uid
    }
}
