// SPDX-License-Identifier: Apache-2.0
import LocalAuthProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// Who is on the other end of a connection, from `SO_PEERCRED`: never from what the client says.
public struct PeerCredentials: Equatable, Sendable, CustomStringConvertible {
    public var pid: Int32
    /// The effective uid at connect (`SO_PEERCRED`): it decides what the caller may do.
    public var uid: UInt32
    public var gid: UInt32
    /// The account name of `uid`, nil when the uid has none.
    public var userName: String?
    /// The process that connected, pinned at accept; nil for credentials made in process (tests).
    public let process: PeerProcess?
    /// The process the request is made for, from the pidfd the client passed (REQUESTER, for one
    /// request): an ssh agent's client. Of the caller's own account; it only names the program in
    /// the prompt ("ssh via the agent"), and decides nothing else.
    public var requester: PeerProcess?

    public init(pid: Int32, uid: UInt32, gid: UInt32, userName: String?, process: PeerProcess? = nil) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.userName = userName
        self.process = process
    }

    public static func == (a: PeerCredentials, b: PeerCredentials) -> Bool {
        a.pid == b.pid && a.uid == b.uid && a.gid == b.gid && a.userName == b.userName && a.process === b.process
            && a.requester === b.requester
    }

    public var isRoot: Bool { uid == 0 }

    /// The real uid of the process that connected (`/proc/<pid>/status`, read at accept): for
    /// `su`, `sudo`, `pkexec` and polkit's helper (setuid root), the user who started them.
    public var realUID: UInt32? {
        guard let process else { return uid }
        return process.realUID
    }

    /// Counted under by the per-uid limits (connections, requests running, requests a second):
    /// the caller's uid, or for a root-credentialed process the real uid of it, so that a user
    /// gains nothing by connecting through 40 `su`s (issue 13, M2). Only root's own tools (real
    /// uid 0) are unlimited; a root-credentialed process whose real uid cannot be read is counted
    /// under `unattributedUID`, limited like a user: fail closed.
    public var accountUID: UInt32 {
        guard uid == 0 else { return uid }
        return realUID ?? Self.unattributedUID
    }

    /// The account of root-credentialed callers whose real uid is unknown (never a real uid:
    /// the kernel's overflow range ends below it).
    public static let unattributedUID: UInt32 = 0xFFFF_FFFE

    /// True while the process that opened the connection still runs. A connection its creator
    /// left behind (to a child, through fork or SCM_RIGHTS) is judged by a pid that may name
    /// another process now: biometrics refuse it (issue 13, L4). True for credentials made in
    /// process, which have no process to pin.
    public var isStillTheConnectingProcess: Bool { process?.isStillRunning ?? true }

    /// The program that connected, which owns the rights it saves (ADR 0012); unknown for
    /// credentials made in process, which have no process to read: no right is theirs.
    public var program: ProgramIdentity.Reading {
        process?.program ?? .unknown("no process was pinned for this caller")
    }

    public var description: String {
        let real = realUID.map { $0 == uid ? "" : " real uid \($0)" } ?? " real uid unknown"
        return "uid \(uid) (\(userName ?? "?"))\(real) pid \(pid)"
    }

    /// The uid of the account `name` through `getpwnam_r`; nil when there is none.
    public static func uid(of name: String) -> UInt32? {
        var pwd = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwnam_r(name, &pwd, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return pwd.pw_uid
    }

    /// The name of `uid` through `getpwuid_r`.
    public static func userName(of uid: UInt32) -> String? {
        var pwd = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &pwd, &buffer, buffer.count, &result) == 0, result != nil, let name = pwd.pw_name else {
            return nil
        }
        return String(cString: name)
    }
}

/// The operations the authorisation table speaks of; one per request type, and a door's claim on a
/// reader and its release (fprintd's Claim and Release, `Daemon.claimReader`), which have no socket
/// request.
public enum Operation: String, Sendable, CaseIterable {
    case status, canEvaluate, evaluate, enroll, list, delete, devices, simulate
    case passcodeSet, passcodeRemove, lockoutReset, passwordUsed, importFprintd
    case rightSave, rightGet, rightRemove, rightUse
    case claimReader, releaseReader
}

/// The authorisation table of `docs/security.md`, as one pure function.
public enum Authorization {
    public enum Decision: Equatable, Sendable {
        case allowed
        case refused(String)
    }

    /// May `caller` perform `operation` on `target`'s account? (`target` nil: no account involved.)
    ///
    /// State-dependent rules (a first finger needs root, later ones proof of presence, simulation
    /// needs a virtual reader) are checked by the daemon after this.
    public static func decide(_ operation: Operation, caller: PeerCredentials, target: String?) -> Decision {
        switch operation {
        case .rightSave, .rightGet, .rightUse:
            // A right is its owner's alone: root may remove one, never read or use it (root's own
            // rights are root's: the caller is then the owner).
            guard let target, let own = caller.userName, own == target else {
                return .refused(
                    "a right is used only by its owner; uid \(caller.uid) may not use the rights of '\(target ?? "?")'")
            }
            return .allowed
        default:
            break
        }
        if caller.isRoot { return .allowed }
        switch operation {
        case .simulate:
            return .refused("only root may drive the simulated reader")
        case .lockoutReset:
            return .refused("only root may reset a lockout")
        case .importFprintd:
            return .refused("only root may import fprintd's prints")
        case .devices:
            return .allowed
        case .status, .canEvaluate, .evaluate, .enroll, .list, .delete, .passcodeSet, .passcodeRemove, .rightRemove,
            .rightSave, .rightGet, .rightUse, .passwordUsed, .claimReader, .releaseReader:
            guard let target else { return .allowed }
            guard let own = caller.userName, own == target else {
                return .refused("uid \(caller.uid) may act only for its own account, not for \(Echo.quoted(target))")
            }
            return .allowed
        }
    }
}
