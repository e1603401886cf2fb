// SPDX-License-Identifier: Apache-2.0
import LocalAuthProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// Who is on the other end of a connection, from `SO_PEERCRED`: never from what the client says.
public struct PeerCredentials: Equatable, Sendable, CustomStringConvertible {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
    /// The account name of `uid`, nil when the uid has none.
    public var userName: String?

    public init(pid: Int32, uid: UInt32, gid: UInt32, userName: String?) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.userName = userName
    }

    public var isRoot: Bool { uid == 0 }
    public var description: String { "uid \(uid) (\(userName ?? "?")) pid \(pid)" }

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

/// The operations the authorisation table speaks of; one per request type.
public enum Operation: String, Sendable, CaseIterable {
    case status, canEvaluate, evaluate, enroll, list, delete, devices, simulate
    case passcodeSet, passcodeRemove, lockoutReset

    public init(_ request: Request) {
        switch request {
        case .status: self = .status
        case .canEvaluate: self = .canEvaluate
        case .evaluate: self = .evaluate
        case .enroll: self = .enroll
        case .list: self = .list
        case .delete: self = .delete
        case .devices: self = .devices
        case .simulate: self = .simulate
        case .passcodeSet: self = .passcodeSet
        case .passcodeRemove: self = .passcodeRemove
        case .lockoutReset: self = .lockoutReset
        }
    }
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
        if caller.isRoot { return .allowed }
        switch operation {
        case .simulate, .lockoutReset:
            return .refused(
                "only root may \(operation == .simulate ? "drive the simulated reader" : "reset a lockout")")
        case .devices:
            return .allowed
        case .status, .canEvaluate, .evaluate, .enroll, .list, .delete, .passcodeSet, .passcodeRemove:
            guard let target else { return .allowed }
            guard let own = caller.userName, own == target else {
                return .refused("uid \(caller.uid) may act only for its own account, not for \(Echo.quoted(target))")
            }
            return .allowed
        }
    }
}
