// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import LocalAuthClient
import LocalAuthLocalization
import LocalAuthProtocol
import SSHAgentProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// `localauthctl ssh-agent`: the account's ssh agent (docs/adr/0011-ssh-agent.md). It holds no key:
/// each signature is a RIGHT_USE of the key's right, which the daemon answers after a finger.
struct SSHAgentCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ssh-agent",
        abstract: tr("Run your ssh agent in the foreground: each signature asks for a finger."),
        discussion: tr(
            "Without --socket: the socket systemd passes (the user unit localauth-ssh-agent.socket), else $XDG_RUNTIME_DIR/localauth/ssh-agent. Point SSH_AUTH_SOCK at it."
        ))
    @Option(help: ArgumentHelp(tr("The agent's socket; its directory is made 0700.")))
    var socket: String?
    @Option(
        name: .customLong("daemon-socket"),
        help: ArgumentHelp(tr("The daemon's socket (default: $LOCALAUTHD_SOCKET, else /run/localauthd/socket).")))
    var daemonSocket: String?
    @Option(help: ArgumentHelp(tr("Seconds to wait for a finger.")))
    var timeout: Int64 = 30

    func validate() throws {
        guard (1...300).contains(timeout) else { throw ValidationError(tr("--timeout takes 1 to 300 seconds")) }
    }

    func run() throws {
        let listener: Int32
        if let fd = SSHAgentSocket.systemdSocket(), socket == nil {
            listener = fd
        } else {
            let path = socket ?? SSHAgentSocket.defaultPath
            do {
                listener = try SSHAgentSocket.listen(path: path)
            } catch {
                fail(tr("cannot listen on %s", .text(error.text)), code: Exit.refused)
            }
            // English: the agent's log
            agentLog("listening on \(path)")
        }
        signal(SIGPIPE, SIG_IGN)
        let agent = SSHAgent(daemonSocket: daemonSocket, timeoutMs: timeout * 1000)
        agent.serve(listener)
    }
}

/// One line on standard error (the journal, under systemd). Control characters a client chose (an
/// executable's name, an extension's, an account's) are written as `\xNN`, so no client forges a line.
func agentLog(_ line: String) {
    var clean = ""
    for scalar in line.unicodeScalars {
        if scalar.value < 0x20 || scalar.value == 0x7f {
            let hex = String(scalar.value, radix: 16)
            clean += "\\x" + (hex.count < 2 ? "0" : "") + hex
        } else {
            clean.unicodeScalars.append(scalar)
        }
    }
    // English: the agent's log
    printError("localauthctl ssh-agent: " + clean)
}

enum SSHAgentSocket {
    static var defaultPath: String {
        if let runtime = getenv("XDG_RUNTIME_DIR"), runtime.pointee == UInt8(ascii: "/") {
            return String(cString: runtime) + "/localauth/ssh-agent"
        }
        return "/run/user/\(getuid())/localauth/ssh-agent"
    }

    /// `LISTEN_FDS=1` for this process: systemd's socket, descriptor 3.
    static func systemdSocket() -> Int32? {
        guard let pid = getenv("LISTEN_PID"), Int32(String(cString: pid)) == getpid(), let fds = getenv("LISTEN_FDS"),
            String(cString: fds) == "1"
        else { return nil }
        unsetenv("LISTEN_PID")
        unsetenv("LISTEN_FDS")
        unsetenv("LISTEN_FDNAMES")
        _ = fcntl(3, F_SETFD, FD_CLOEXEC)
        return 3
    }

    /// Binds `path` mode 0600 in a directory that is ours and 0700 (made so when missing; an
    /// existing one that others can enter is refused, not changed). A stale socket is replaced.
    static func listen(path: String) throws(FileError) -> Int32 {
        let dir = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        if mkdir(dir, 0o700) != 0 && errno != EEXIST { throw FileError(path: dir, errno: errno) }
        var st = stat()
        guard lstat(dir, &st) == 0 else { throw FileError(path: dir, errno: errno) }
        guard st.st_mode & S_IFMT == S_IFDIR, st.st_uid == getuid(), st.st_mode & 0o077 == 0 else {
            throw FileError(path: dir, errno: EPERM)
        }
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw FileError(path: path, errno: errno) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw FileError(path: path, errno: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        if lstat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFSOCK { unlink(path) }
        let old = umask(0o177)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        umask(old)
        guard bound == 0, chmod(path, 0o600) == 0, Glibc.listen(fd, 16) == 0 else {
            let e = errno
            close(fd)
            throw FileError(path: path, errno: e)
        }
        return fd
    }
}

/// Runs `body` on a thread of its own (one per agent connection: a signature waits for a finger).
private final class ThreadBody: @unchecked Sendable {
    let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
}

private func detachThread(_ body: @escaping () -> Void) -> Bool {
    let box = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(
        &thread, nil,
        { raw in
            Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue().body()
            return nil
        }, box)
    guard rc == 0 else {
        Unmanaged<ThreadBody>.fromOpaque(box).release()
        return false
    }
    pthread_detach(thread)
    return true
}

/// What the agent knows about the process on the other end of a connection.
struct AgentPeer {
    var pid: Int32
    var uid: UInt32
    /// The executable (`/proc/<pid>/exe`), read while the process was pinned; nil when it could not be.
    var executable: String?

    /// SO_PEERCRED, the process pinned by SO_PEERPIDFD (else `/proc/<pid>` opened first), then its exe.
    init?(fd: Int32) {
        var cred = (pid: Int32(0), uid: UInt32(0), gid: UInt32(0))
        var size = socklen_t(MemoryLayout.size(ofValue: cred))
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &size) == 0 else { return nil }
        pid = cred.pid
        uid = cred.uid
        var pidfd: Int32 = -1
        var pidfdSize = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(fd, SOL_SOCKET, 77, &pidfd, &pidfdSize) != 0 { pidfd = -1 }  // SO_PEERPIDFD, Linux 6.5+
        let dir = open("/proc/\(cred.pid)", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        var link = [UInt8](repeating: 0, count: 4096)
        let n = dir >= 0 ? readlinkat(dir, "exe", &link, link.count - 1) : -1
        var exe = n > 0 ? String(decoding: link[0..<n], as: UTF8.self) : nil
        if pidfd >= 0 {
            var p = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
            if poll(&p, 1, 0) != 0 { exe = nil }  // exited: the pid may name another process now
            close(pidfd)
        }
        if dir >= 0 { close(dir) }
        executable = exe
    }
}

/// Watches an agent client while its signature waits for a finger: when the client hangs up, the
/// daemon connection is shut down, which the daemon takes as a cancel (nothing counted).
private final class HangupWatch: @unchecked Sendable {
    private let wake: (read: Int32, write: Int32)

    init(client: Int32, connection: DaemonConnection) {
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) != 0 { fds = [-1, -1] }
        wake = (fds[0], fds[1])
        let wakeRead = fds[0]
        guard wakeRead >= 0 else { return }
        let started = detachThread {
            // POLLRDHUP (0x2000, a _GNU_SOURCE name): the client closed or shut its end down.
            var p = [
                pollfd(fd: client, events: 0x2000, revents: 0),
                pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
            ]
            while poll(&p, 2, -1) < 0 && errno == EINTR {}
            if p[1].revents == 0 && p[0].revents != 0 {
                // English: the agent's log
                agentLog("the client hung up: the request is cancelled")
                connection.interrupt()
            }
            Glibc.close(wakeRead)
        }
        if !started { Glibc.close(wakeRead) }
    }

    /// Wakes the watcher and lets it end (it closes its end of the pipe itself).
    func stop() {
        guard wake.write >= 0 else { return }
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
        Glibc.close(wake.write)
    }
}

/// The keys' open reuse windows (`--reuse`): key name → when it closes (monotonic ms). While one is
/// open the daemon holds an authorization of the key for this process; when it closes (its own
/// timer, or a signature that finds it closed) the agent sends RIGHT_USE deauthorize.
final class ReuseWindows: @unchecked Sendable {
    private let closes = Locked([String: Int64]())

    func isOpen(_ name: String) -> Bool {
        let now = DaemonConnection.now()
        return closes.with { ($0[name] ?? 0) > now }
    }

    func open(_ name: String, seconds: Int64, agent: SSHAgent, identifier: String) {
        let closesAt = DaemonConnection.now() + seconds * 1000
        closes.with { $0[name] = closesAt }
        _ = detachThread { [self] in
            let wait = closesAt - DaemonConnection.now()
            if wait > 0 { usleep(UInt32(min(wait, 300_000)) * 1000) }
            // A later finger opened a new window: that one's timer closes it.
            guard closes.with({ $0[name] == closesAt }) else { return }
            close(name, agent: agent, identifier: identifier)
        }
    }

    func close(_ name: String, agent: SSHAgent, identifier: String) {
        closes.with { $0[name] = nil }
        guard
            let connection = try? DaemonConnection(
                socketPath: agent.daemonSocket ?? DaemonConnection.defaultSocketPath,
                // English: a program's name
                clientName: "localauthctl ssh-agent"),
            let result = try? connection.perform(
                .rightUse(RightUseOptions(identifier: identifier, operation: .deauthorize)), timeoutMs: 10_000),
            result.isSuccess
        else {
            // English: the agent's log
            agentLog("key \(name): the reuse window closed, but the daemon could not be told")
            return
        }
        // English: the agent's log
        agentLog("key \(name): the reuse window closed")
    }
}

/// A small lock for what connections share.
private final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private var mutex = pthread_mutex_t()
    init(_ value: Value) {
        self.value = value
        pthread_mutex_init(&mutex, nil)
    }
    func with<R>(_ body: (inout Value) -> R) -> R {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return body(&value)
    }
}

final class SSHAgent: @unchecked Sendable {
    let daemonSocket: String?
    let timeoutMs: Int64
    static let maxConnections = 64
    private let connections = Locked(0)
    let windows = ReuseWindows()

    init(daemonSocket: String?, timeoutMs: Int64) {
        self.daemonSocket = daemonSocket
        self.timeoutMs = timeoutMs
    }

    func serve(_ listener: Int32) -> Never {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE {
                    if errno == EMFILE || errno == ENFILE { usleep(100_000) }
                    continue
                }
                // English: the agent's log
                agentLog("accept: \(String(cString: strerror(errno)))")
                exit(Exit.refused)
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            guard let peer = AgentPeer(fd: fd), peer.uid == getuid() else {
                // English: the agent's log
                agentLog(
                    "refused a connection from uid \(AgentPeer(fd: fd).map { String($0.uid) } ?? "?"): not this account"
                )
                close(fd)
                continue
            }
            let admitted = connections.with { n in
                guard n < Self.maxConnections else { return false }
                n += 1
                return true
            }
            guard admitted else {
                // English: the agent's log
                agentLog("refused a connection: \(Self.maxConnections) are open")
                close(fd)
                continue
            }
            let started = detachThread { [self] in
                var connection = AgentConnection(fd: fd, peer: peer, agent: self)
                connection.run()
                close(fd)
                connections.with { $0 -= 1 }
            }
            if !started {
                close(fd)
                connections.with { $0 -= 1 }
            }
        }
    }
}

/// One client connection: frames in, answers out, until it closes.
struct AgentConnection {
    let fd: Int32
    let peer: AgentPeer
    let agent: SSHAgent
    /// What `session-bind@openssh.com` said on this connection (the last one counts for the
    /// host; any forwarding bind marks the connection forwarded for good).
    var boundHost: [UInt8]?
    var forwarded = false
    /// The desktop notification of the prompt in flight; closed once the answer is sent.
    var notification = DesktopNotification()

    init(fd: Int32, peer: AgentPeer, agent: SSHAgent) {
        self.fd = fd
        self.peer = peer
        self.agent = agent
    }

    var program: String { peer.executable ?? "pid \(peer.pid)" }

    mutating func run() {
        var reader = AgentFrameReader()
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            do {
                while let body = try reader.next() {
                    let sent = send(answer(body).frame)
                    notification.close()
                    guard sent else { return }
                }
            } catch {
                // English: the agent's log
                agentLog("\(program): \(error); connection closed")
                _ = send(AgentResponse.failure.frame)
                return
            }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return }
            reader.append(buffer[0..<n])
        }
    }

    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            offset += n
        }
        return true
    }

    mutating func answer(_ body: [UInt8]) -> AgentResponse {
        let request: AgentRequest
        do {
            request = try AgentRequest(frame: body)
        } catch {
            // English: the agent's log
            agentLog("\(program): \(error); answered SSH_AGENT_FAILURE")
            return .failure
        }
        switch request {
        case .requestIdentities:
            let keys = SSHAgentKeys.load(socket: agent.daemonSocket, log: agentLog)
            return .identities(keys.map { AgentIdentity(keyBlob: $0.blob, comment: "localauth:" + $0.entry.name) })
        case .sign(let blob, let data, _):
            return sign(blob: blob, data: data)
        case .sessionBind(let bind):
            boundHost = bind.hostKey
            if bind.isForwarding { forwarded = true }
            return .success
        case .otherExtension(let name):
            // English: the agent's log
            agentLog("\(program): extension \(name) is not supported")
            return .failure
        case .addIdentity:
            // English: the agent's log
            agentLog(
                "\(program): ssh-add of a key refused: this agent holds only keys a finger releases (localauthctl ssh-key create); keep a second agent for file keys"
            )
            return .failure
        case .unsupported(let number), .unknown(let number):
            // English: the agent's log
            agentLog("\(program): message \(number) is not served; answered SSH_AGENT_FAILURE")
            return .failure
        }
    }

    mutating func sign(blob: [UInt8], data: [UInt8]) -> AgentResponse {
        guard SSHECDSAKey.point(blob: blob) != nil,
            let key = SSHAgentKeys.load(socket: agent.daemonSocket, log: agentLog).first(where: { $0.blob == blob })
        else {
            // English: the agent's log
            agentLog("\(program): asked to sign with a key this agent does not hold")
            return .failure
        }
        let name = key.entry.name
        if forwarded && !key.entry.allowForwarding {
            // English: the agent's log
            agentLog(
                "\(program): key \(name) refused to a forwarded connection (ssh-key create --allow-forwarding allows it)"
            )
            return .failure
        }
        var reason = reasonText(key: name, data: data)
        // No fallback button: nobody can type a passcode to an agent.
        var signing = RightUseOptions(
            identifier: key.entry.identifier, operation: .sign, algorithm: "ecdsaSignatureMessageX962SHA256",
            data: data, service: "ssh-agent", reason: reason, fallbackTitle: "", timeoutMs: agent.timeoutMs)
        let reuse = key.entry.reuseSeconds
        if reuse > 0 {
            // The reuse window (ssh-key create --reuse): a finger authorizes the key for this agent
            // process (RIGHT_USE authorize, held by the daemon for this process), the agent signs
            // without asking while the window is open and deauthorizes when it closes.
            signing.flags = [.interactionNotAllowed]
            if agent.windows.isOpen(name) {
                if let result = ask(signing, name: name), result.isSuccess {
                    // English: the agent's log
                    return answer(result, name: name, how: "signed in the reuse window")
                }
                agent.windows.close(name, agent: agent, identifier: key.entry.identifier)
            }
            reason = tr("%1$s (and for %2$d seconds after, with this key)", .text(reason), .number(reuse))
            // English: the agent's log
            agentLog("\(program): key \(name): asking for a finger (\(reason))")
            let authorizing = RightUseOptions(
                identifier: key.entry.identifier, operation: .authorize, service: "ssh-agent", reason: reason,
                fallbackTitle: "", timeoutMs: agent.timeoutMs)
            guard let authorized = ask(authorizing, name: name), authorized.isSuccess else { return .failure }
            agent.windows.open(name, seconds: reuse, agent: agent, identifier: key.entry.identifier)
        } else {
            // English: the agent's log
            agentLog("\(program): key \(name): asking for a finger (\(reason))")
        }
        return answer(ask(signing, name: name), name: name, how: "signed")
    }

    /// One RIGHT_USE on a connection of its own; its events on the log and the desktop. nil when the
    /// daemon could not be asked (said on the log).
    mutating func ask(_ options: RightUseOptions, name: String) -> RequestResult? {
        do {
            let connection = try DaemonConnection(
                socketPath: agent.daemonSocket ?? DaemonConnection.defaultSocketPath,
                // English: a program's name
                clientName: "localauthctl ssh-agent")
            // A client that goes away (ssh interrupted) ends the request: the daemon cancels it.
            let watch = HangupWatch(client: fd, connection: connection)
            defer { watch.stop() }
            let result = try connection.perform(.rightUse(options), timeoutMs: options.timeoutMs + 10_000) { event in
                // English: the agent's log
                agentLog("key \(name): \(event.localizedMessage())")
                notification.show(summary: tr("ssh: touch the fingerprint reader"), body: event.localizedMessage())
                return event.kind == .passcodeNeeded ? .cancel : nil
            }
            if !result.isSuccess {
                // English: the agent's log
                agentLog(
                    "\(program): key \(name): refused: \(result.localizedMessage()) (\(result.resultCode?.name ?? String(result.code)))"
                )
            }
            return result
        } catch {
            // English: the agent's log
            agentLog("\(program): key \(name): \(error.description)")
            return nil
        }
    }

    /// The signature of a successful RIGHT_USE sign, as OpenSSH reads it; else SSH_AGENT_FAILURE.
    func answer(_ result: RequestResult?, name: String, how: String) -> AgentResponse {
        guard let result, result.isSuccess, let der = result.fields.bytes(.data),
            let signature = SSHECDSAKey.signatureBlob(der: der)
        else { return .failure }
        // English: the agent's log
        agentLog("\(program): key \(name): \(how)")
        return .signature(signature)
    }

    /// What the person reads at the prompt: the program by its executable, the key, and where
    /// OpenSSH said (session-bind), the host as known_hosts names it (else its key's fingerprint).
    func reasonText(key: String, data: [UInt8]) -> String {
        switch SignedDataKind(data: data) {
        case .userAuthentication(let user):
            let host = boundHost.map { hostText($0) } ?? tr("an unnamed host")
            return tr(
                "%1$s: log in as %2$s on %3$s with ssh key %4$s", .text(program), .text(user), .text(host), .text(key))
        case .sshsig(let namespace):
            return tr("%1$s: sign (%2$s) with ssh key %3$s", .text(program), .text(namespace), .text(key))
        case .other:
            return tr("%1$s: sign with ssh key %2$s", .text(program), .text(key))
        }
    }

    func hostText(_ hostKey: [UInt8]) -> String {
        var home = ""
        if let h = getenv("HOME") { home = String(cString: h) }
        for file in [home + "/.ssh/known_hosts", "/etc/ssh/ssh_known_hosts"] {
            if let text = SSHKeyFile.readSmallFile(file, limit: 4 << 20),
                let name = hostName(forKey: hostKey, knownHosts: text)
            {
                return name
            }
        }
        return SHA256.fingerprint(blob: hostKey)
    }
}
