// SPDX-License-Identifier: Apache-2.0
import LocalAuthCore
import LocalAuthProtocol
import LocalAuthSystemd

#if canImport(Glibc)
    import Glibc
#endif

/// Where a request comes from (the caller's real uid, login session, terminal) and the presence
/// rule's verdict on it, found before anything about the target account is read (issue 13, C2/L1).
/// Every door goes through `Daemon.handle`, so every door meets the same rule.
struct Whereabouts {
    let origin: RequestOrigin
    let place: CallerSession
    let verdict: Presence.Verdict
    /// Whose request a prompt is: the calling program and the account.
    let label: RequestLabel
    /// The session part of the reuse scope: the session's key, or one of its own, matching no other,
    /// for a connection whose creator is gone.
    let reuseKey: String

    /// Asks the kernel (through the connection's pinned process) and logind, in one visit to the bus
    /// with the lid when a built-in reader is present (the evaluation may use any present reader).
    nonisolated(nonsending) static func find(
        caller: PeerCredentials, target: String, tty: String?, service: String?, right: String? = nil,
        parts: DaemonParts
    ) async -> Whereabouts {
        let builtInPresent = await (parts.reader?.devices() ?? []).contains { parts.isBuiltIn($0) }
        let place = await parts.sessions.view(of: caller.pid, uid: caller.uid, tty: tty, askLid: builtInPresent)
        // Checked after the lookups by pid: if the process that connected is gone, they may have
        // been about another process that has its pid now (issue 13, L4).
        let orphaned = !caller.isStillTheConnectingProcess
        let real = caller.realUID
        let requesterUID: UInt32? = caller.uid != 0 ? caller.uid : (real == 0 ? nil : real)
        var activeOnASeat = false
        if place.session == nil, place.logindPresent, let requesterUID {
            activeOnASeat = await parts.sessions.isActiveOnASeat(uid: requesterUID)
        }
        let session = place.session.map(SessionFacts.init)
        let origin = RequestOrigin(
            uid: caller.uid, name: caller.userName, realUID: real,
            realName: real.flatMap { $0 == caller.uid ? caller.userName : PeerCredentials.userName(of: $0) },
            session: session, logindPresent: place.logindPresent,
            onForegroundVT: ForegroundTerminal.isForeground(caller.process?.controllingTTY),
            requesterActiveOnASeat: activeOnASeat, connectionOrphaned: orphaned)
        return Whereabouts(
            origin: origin, place: place, verdict: Presence.decide(origin, target: target),
            label: RequestLabel(
                program: programName(caller, service: service), account: target,
                right: right.map { Echo.truncated($0, maxBytes: 96) }),
            reuseKey: orphaned ? "orphaned:\(caller.pid):\(parts.clock())" : place.key)
    }

    /// Whose request it is, as a person is told, from what the process cannot choose, never from a
    /// name it gave itself or the service it sent (a process renamed `sudo` with `prctl` was shown as
    /// "sudo", issue 26):
    /// - a setuid-root program the user started (root's credentials, the user's real uid: sudo, su,
    ///   pkexec, polkit-agent-helper-1): the name of the file it runs (its executable's, where the
    ///   daemon may read it; else the kernel's name of it, `comm`, cut to 15 bytes), since no process
    ///   of the user can rename a process that runs as root;
    /// - any other: its executable's path ("a program that is not PATH" when a namespace of the
    ///   user's put another file there); where the daemon may not read it (another uid's, under
    ///   the shipped unit without `CAP_SYS_PTRACE`), the name it gives itself, said to be that.
    /// A client in the daemon's own process (tests) has no process: the service it gave.
    /// A request made for another process of the account (REQUESTER: an ssh agent's client) names
    /// that process as any ordinary caller is named, then the caller: "/usr/bin/ssh via
    /// /usr/bin/localauthctl" (under the shipped unit, which may not read another uid's executable:
    /// "a program calling itself 'ssh' via a program calling itself 'localauthctl'"); a client can
    /// thus choose which of its account's processes is named first, never leave itself out.
    static func programName(_ caller: PeerCredentials, service: String?) -> String {
        let named = callerName(caller, service: service)
        guard let requester = caller.requester, requester.pid != caller.pid else { return named }
        // English, as the names around it ("a program that is not …"): a wire token of the label.
        return processName(requester) + " via " + named
    }

    /// An ordinary process: by its executable, else (the daemon may not read it) by the name it
    /// gives itself, said to be that.
    static func processName(_ process: PeerProcess) -> String {
        if process.executable != nil { return executableName(process) }
        if let command = process.command { return "a program calling itself " + Echo.quoted(command) }
        return "an unidentified program"
    }

    static func executableName(_ process: PeerProcess) -> String {
        guard let path = process.executable else { return "an unidentified program" }
        // Cut at the end, never the start: a long path keeps the directory it really is in.
        let shown = Echo.truncated(path, maxBytes: 160)
        return process.executableIsAtItsPath ? shown : "a program that is not " + shown
    }

    private static func callerName(_ caller: PeerCredentials, service: String?) -> String {
        guard let process = caller.process else {
            return service.map { Echo.truncated($0, maxBytes: 32) } ?? "a request"
        }
        if caller.uid == 0, let real = process.realUID, real != 0 {
            // The file's name from its executable where the daemon may read it: `comm` is cut to 15
            // bytes ("polkit-agent-he" for polkit-agent-helper-1) and is a link's name when run
            // through one.
            if let path = process.executable, process.executableIsAtItsPath,
                let name = path.split(separator: "/").last
            {
                return Echo.truncated(String(name), maxBytes: 160)
            }
            if let command = process.command { return command }
        }
        return processName(process)
    }

    /// The refusal, as the answer to an evaluation or a canEvaluate; nil when biometrics may be offered.
    var refusal: Decision? {
        guard case .refused(let why) = verdict else { return nil }
        return Decision(.biometryNotAvailable, .fingerNotAvailable(why))
    }
}

/// The virtual terminal in front (`/sys/class/tty/tty0/active`) and whether a caller's controlling
/// terminal is it: where `login` runs before pam_systemd gives it a session.
enum ForegroundTerminal {
    static func isForeground(_ controllingTTY: UInt32?, activePath: String = "/sys/class/tty/tty0/active") -> Bool {
        guard let controllingTTY, let name = virtualTerminal(controllingTTY), let active = read(activePath) else {
            return false
        }
        return name == active
    }

    /// "ttyN" for a virtual terminal's device number (major 4, minor 1…63); nil for anything else
    /// (a pseudo-terminal, a serial line).
    static func virtualTerminal(_ device: UInt32) -> String? {
        let major = (device >> 8) & 0xfff
        let minor = (device & 0xff) | ((device >> 12) & 0xfff00)
        guard major == 4, (1...63).contains(minor) else { return nil }
        return "tty\(minor)"
    }

    private static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 32)
        let n = Glibc.read(fd, &buffer, buffer.count)
        guard n > 0 else { return nil }
        return String(decoding: buffer[..<n], as: UTF8.self).trimmingNewline
    }
}

extension String {
    fileprivate var trimmingNewline: String { String(prefix { $0 != "\n" }) }
}

extension SessionFacts {
    /// logind's session as the rules read it: its owner by uid and by name.
    init(_ session: LoginSession) {
        self.init(
            owner: PeerCredentials.userName(of: session.ownerUID), ownerUID: session.ownerUID,
            sessionClass: session.sessionClass, seat: session.seat, isActive: session.isActive,
            isRemote: session.isRemote)
    }
}
