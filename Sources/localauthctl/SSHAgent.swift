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

/// Runs `body` on a thread of its own (one per agent connection: a signature waits for a finger).
final class ThreadBody: @unchecked Sendable {
    let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
}

func detachThread(_ body: @escaping () -> Void) -> Bool {
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

/// A small lock for what connections share.
final class Locked<Value>: @unchecked Sendable {
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
