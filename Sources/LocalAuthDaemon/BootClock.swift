// SPDX-License-Identifier: Apache-2.0
import LocalAuthCore
import LocalAuthSystemd

#if canImport(Glibc)
    import Glibc
#endif

/// Now, as the "password required" rules measure it: this boot's id and its `CLOCK_BOOTTIME`,
/// beside the wall clock.
///
/// The boot is identified by `/proc/sys/kernel/random/boot_id` and nothing else (DESIGN.md): a new
/// value is a restart, however little time the clocks say has passed. It is read at every request,
/// so a test that mounts another file over it in a private mount namespace is a new boot at once.
///
/// Which `/proc` it is read from: the daemon's own, except when systemd runs the machine and
/// started the daemon (its parent is PID 1); then PID 1's (`/proc/1/root/proc/…`). The unit's
/// `ProtectProc=` gives the daemon a procfs of its own, which shows the kernel's boot id; in a
/// container, the machine's boot id is the one its manager (systemd-nspawn) mounts over that file
/// for the container, which PID 1 sees and the daemon's own procfs hides. On a machine of its own
/// the two are the same. Should PID 1's be unreadable (no `CAP_SYS_PTRACE`), the daemon's own.
/// A file mounted over the daemon's own path (a test's private mount namespace, a unit's
/// `BindReadOnlyPaths=`: anything but procfs there) is the boot id, whoever started the daemon.
public enum BootClock {
    public static let bootIDPath = "/proc/sys/kernel/random/boot_id"
    /// The boot id as PID 1 sees it (through its root, in its mount namespace).
    public static let machineBootIDPath = "/proc/1/root/proc/sys/kernel/random/boot_id"

    /// Where the boot id is read, first to last: PID 1's view when `startedBySystemd` and the
    /// daemon's own path still shows procfs' file, then the daemon's own.
    static func bootIDPaths(startedBySystemd: Bool, ownPathIsProcfs: Bool) -> [String] {
        startedBySystemd && ownPathIsProcfs ? [machineBootIDPath, bootIDPath] : [bootIDPath]
    }

    /// Whether the file at `path` is on the same file system as `/proc` (procfs' own file), not one
    /// mounted over it.
    static func isOnProcfs(_ path: String) -> Bool {
        var proc = stat()
        var file = stat()
        return stat("/proc", &proc) == 0 && stat(path, &file) == 0 && proc.st_dev == file.st_dev
    }

    /// systemd runs the machine (`sd_booted()`) and is the daemon's parent: a service of its. Asked
    /// once (a parent is never PID 1 for a while and then another).
    static let startedBySystemd = getppid() == 1 && SystemdMachine.isBooted

    /// Now on both clocks; nil when the boot id cannot be read (then nothing can be recorded, and
    /// the rules find no password used in this boot: the strict side). `bootIDPath`: that file
    /// alone (tests); else `bootIDPaths`.
    public static func now(wallMs: Int64, bootIDPath: String? = nil) -> BootInstant? {
        let paths =
            bootIDPath.map { [$0] }
            ?? bootIDPaths(
                startedBySystemd: startedBySystemd,
                ownPathIsProcfs: startedBySystemd && isOnProcfs(Self.bootIDPath))
        guard let id = firstBootID(in: paths) else { return nil }
        var ts = timespec()
        clock_gettime(CLOCK_BOOTTIME, &ts)
        return BootInstant(bootID: id, bootMs: Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000, wallMs: wallMs)
    }

    /// The first of `paths` that holds a boot id, each read once. (`paths.lazy.compactMap(read).first`
    /// read the found file a second time and force-unwrapped that second answer: a file rewritten
    /// in between, as a test's private boot id is, killed the daemon with SIGILL.)
    static func firstBootID(in paths: [String], read: (String) -> String? = readBootID) -> String? {
        for path in paths {
            if let id = read(path) { return id }
        }
        return nil
    }

    /// The kernel's UUID (`8-4-4-4-12` lowercase hex and a newline) as 32 hex digits; nil for
    /// anything else.
    static func readBootID(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = read(fd, &buffer, buffer.count)
        guard n > 0 else { return nil }
        return parseBootID(String(decoding: buffer[..<n], as: UTF8.self))
    }

    static func parseBootID(_ text: String) -> String? {
        let uuid = text.hasSuffix("\n") ? String(text.dropLast()) : text
        let groups = uuid.split(separator: "-", omittingEmptySubsequences: false)
        guard groups.map(\.count) == [8, 4, 4, 4, 12] else { return nil }
        let hex = groups.joined()
        guard hex.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else { return nil }
        return hex
    }
}
