// SPDX-License-Identifier: Apache-2.0
import Glibc

/// Whether a directory the daemon was told to use (the state directory, the socket's directory)
/// can be changed by anyone but root: then it is refused, never repaired (issue 13, M4: a
/// user's symlink at a predictable path in /tmp made root chmod /etc to 0700).
public enum TrustedPath {
    /// Why the directories leading to `path` (not `path` itself) could let another user redirect
    /// or replace it, or nil when they cannot: every one is owned by root (or the daemon's own
    /// uid) and writable by no one else unless sticky (like /tmp), and every symbolic link on the
    /// way is root's.
    public static func ancestorProblem(of path: String) throws(StoreError) -> String? {
        guard path.hasPrefix("/") else { return "\(path) is not an absolute path" }
        let components = path.split(separator: "/").map(String.init)
        var prefix = ""
        for component in components.dropLast() {
            prefix += "/" + component
            guard let link = try Sys.lstatInfo(prefix) else { return nil }  // created below: checked then
            if link.isSymlink && !isTrustedOwner(link.owner) {
                return "\(prefix) is a symbolic link owned by uid \(link.owner)"
            }
            guard let info = try Sys.statInfo(prefix) else { return "\(prefix) is a dangling symbolic link" }
            guard info.isDirectory else { return "\(prefix) is not a directory" }
            if !isTrustedOwner(info.owner) { return "\(prefix) is owned by uid \(info.owner)" }
            if info.permissions & 0o022 != 0 && info.permissions & 0o1000 == 0 {
                return "\(prefix) is writable by others (mode \(String(info.permissions, radix: 8)))"
            }
        }
        return nil
    }

    /// Why the existing directory `path` is not one the daemon may keep private data in, or nil:
    /// it must be a real directory (never a symbolic link), owned by the daemon's uid, with no
    /// permission for group or others. `what` names it in the answer.
    public static func privateDirectoryProblem(_ path: String, what: String) throws(StoreError) -> String? {
        guard let info = try Sys.lstatInfo(path) else { return "\(path) does not exist" }
        if info.isSymlink { return "\(what) \(path) is a symbolic link; give the directory itself" }
        if !info.isDirectory { return "\(what) \(path) is not a directory" }
        if info.owner != Sys.effectiveUser {
            return "\(what) \(path) is owned by uid \(info.owner); it must be owned by uid \(Sys.effectiveUser)"
        }
        if info.permissions & 0o077 != 0 {
            let how = info.permissions & 0o022 != 0 ? "writable" : "readable"
            return "\(what) \(path) is \(how) by others (mode \(String(info.permissions, radix: 8))); "
                + "it must be 0700, and is left as it is (chmod 700 \(path) if that is intended)"
        }
        return nil
    }

    static func isTrustedOwner(_ uid: UInt32) -> Bool { uid == 0 || uid == Sys.effectiveUser }
}
