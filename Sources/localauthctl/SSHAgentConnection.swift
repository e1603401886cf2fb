// SPDX-License-Identifier: Apache-2.0
import LocalAuthClient
import LocalAuthLocalization
import LocalAuthProtocol
import SSHAgentProtocol

#if canImport(Glibc)
    import Glibc
#endif

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
            // ssh-add can only say "agent refused operation": the person is told why where they
            // look, and the notice stays (it is not a prompt that the answer ends).
            var notice = DesktopNotification()
            notice.show(
                summary: tr("ssh-add: key refused"),
                body: tr(
                    "This ssh agent holds only keys your finger releases (localauthctl ssh-key create). Keep a second agent for file keys."
                ))
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
        // No fallback button: the passcode is asked (SSH_ASKPASS) only when the daemon asks for it,
        // and the daemon may ask only where there is an askpass to ask with (passcodeCapable).
        let canAsk: RequestFlags = SSHAskpass.program != nil ? [.passcodeCapable] : []
        var prompt = PromptOptions(
            service: "ssh-agent", reason: reason, fallbackTitle: "", flags: canAsk, timeoutMs: agent.timeoutMs)
        var signing = RightUseOptions(
            identifier: key.entry.identifier, operation: .sign, algorithm: "ecdsaSignatureMessageX962SHA256",
            data: data, prompt: prompt)
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
            prompt.reason = reason
            // English: the agent's log
            agentLog("\(program): key \(name): asking for a finger (\(reason))")
            let authorizing = RightUseOptions(identifier: key.entry.identifier, operation: .authorize, prompt: prompt)
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
            // The daemon names the program from its pidfd, read by the daemon itself.
            if peer.pidfd >= 0 { try connection.passRequester(pidfd: peer.pidfd) }
            // A client that goes away (ssh interrupted) ends the request: the daemon cancels it.
            let watch = HangupWatch(client: fd, connection: connection)
            defer { watch.stop() }
            let result = try connection.perform(.rightUse(options), timeoutMs: options.timeoutMs + 10_000) { event in
                // English: the agent's log
                agentLog("key \(name): \(event.localizedMessage())")
                notification.show(summary: tr("ssh: touch the fingerprint reader"), body: event.localizedMessage())
                guard event.kind == .passcodeNeeded else { return nil }
                // Only when the daemon asks (the fingers locked out, no reader): docs/adr/0011.
                guard
                    let passcode = SSHAskpass.passcode(
                        prompt: tr(
                            "%1$s: enter your localauth passcode to %2$s", .text(event.localizedMessage()),
                            .text(options.reason ?? "")),
                        timeoutMs: agent.timeoutMs)
                else {
                    // English: the agent's log
                    let why =
                        SSHAskpass.program == nil ? "no SSH_ASKPASS program to ask it with" : "SSH_ASKPASS gave none"
                    // English: the agent's log
                    agentLog("key \(name): the daemon asks for the passcode; \(why): cancelled")
                    return .cancel
                }
                // English: the agent's log
                agentLog("key \(name): the passcode, from SSH_ASKPASS, goes to the daemon")
                return .passcode(passcode)
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

    /// What the person reads at the prompt besides the program (which the daemon names itself, from
    /// the pidfd passed with the request): the key, and where OpenSSH said (session-bind), the host
    /// as known_hosts names it (else its key's fingerprint).
    func reasonText(key: String, data: [UInt8]) -> String {
        switch SignedDataKind(data: data) {
        case .userAuthentication(let user):
            let host = boundHost.map { hostText($0) } ?? tr("an unnamed host")
            return tr("log in as %1$s on %2$s with ssh key %3$s", .text(user), .text(host), .text(key))
        case .sshsig(let namespace):
            return tr("sign (%1$s) with ssh key %2$s", .text(namespace), .text(key))
        case .other:
            return tr("sign with ssh key %s", .text(key))
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
