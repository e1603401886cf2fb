// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import LocalAuthDaemon

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct BootClockTests {
    @Test func parseBootID_takesTheKernelsUUIDAsThirtyTwoHexDigits() {
        #expect(
            BootClock.parseBootID("23383262-4eb4-45ba-9b0c-e29b283aabcf\n") == "233832624eb445ba9b0ce29b283aabcf")
        for bad in [
            "", "\n", "23383262-4eb4-45ba-9b0c-e29b283aabc\n", "23383262-4EB4-45ba-9b0c-e29b283aabcf\n",
            "233832624eb445ba9b0ce29b283aabcf\n", "23383262-4eb4-45ba-9b0c-e29b283aabcf-\n",
            "2338326g-4eb4-45ba-9b0c-e29b283aabcf",
        ] {
            #expect(BootClock.parseBootID(bad) == nil, "\(bad)")
        }
    }

    /// Each file is read once: the lazy `compactMap(…).first` it replaced read the found file twice and
    /// force-unwrapped the second read, and a boot id file rewritten in between (the integration
    /// tests' private boot id) killed the daemon (SIGILL, CI of 2026-11-28).
    @Test func firstBootID_readsEachPathOnce_andTakesTheFirstThatHoldsAnID() {
        var reads: [String: Int] = [:]
        let id = BootClock.firstBootID(in: ["/a", "/b", "/c"]) { path in
            reads[path, default: 0] += 1
            return path == "/a" ? nil : "233832624eb445ba9b0ce29b283aabcf" + path
        }
        #expect(id == "233832624eb445ba9b0ce29b283aabcf/b")
        #expect(reads == ["/a": 1, "/b": 1])
        #expect(BootClock.firstBootID(in: ["/a"]) { _ in nil } == nil)
    }

    @Test func now_readsThisBootsIDAndAMonotonicBootClock_andNilWithoutABootID() throws {
        let first = try #require(BootClock.now(wallMs: 5))
        let second = try #require(BootClock.now(wallMs: 6))
        #expect(first.bootID == second.bootID && first.bootID.count == 32)
        #expect(second.bootMs >= first.bootMs && first.bootMs > 0)
        #expect(BootClock.now(wallMs: 5, bootIDPath: "/nonexistent/boot_id") == nil)
    }

    /// Under systemd the boot id is PID 1's view of it (in an nspawn container: the container's, which
    /// the unit's own procfs hides), then the daemon's own; otherwise (tests, no systemd) its own only,
    /// so a test's private mount over it stays a new boot. The booted tier checks the recorded id.
    @Test func bootIDPaths_startedBySystemd_readPID1sViewFirst_elseOnlyTheDaemonsOwn() {
        #expect(
            BootClock.bootIDPaths(startedBySystemd: true, ownPathIsProcfs: true) == [
                "/proc/1/root/proc/sys/kernel/random/boot_id", "/proc/sys/kernel/random/boot_id",
            ])
        #expect(
            BootClock.bootIDPaths(startedBySystemd: false, ownPathIsProcfs: true) == [
                "/proc/sys/kernel/random/boot_id"
            ])
    }

    /// A file mounted over the daemon's own path (DESIGN.md: tests replace it in a private mount
    /// namespace; a unit can bind one) is the boot id even under systemd: PID 1's view never hides it.
    @Test func bootIDPaths_whenAFileIsMountedOverTheOwnPath_readOnlyThatFile_evenUnderSystemd() throws {
        #expect(
            BootClock.bootIDPaths(startedBySystemd: true, ownPathIsProcfs: false) == [
                "/proc/sys/kernel/random/boot_id"
            ])
        #expect(BootClock.isOnProcfs("/proc/sys/kernel/random/boot_id"))
        let file = "/tmp/la-bootid-\(getpid())"
        let fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        close(fd)
        defer { unlink(file) }
        #expect(!BootClock.isOnProcfs(file))
    }
}
