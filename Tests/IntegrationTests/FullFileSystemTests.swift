// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthProtocol
import LocalAuthTesting
import Testing

/// Issue 13, H1: a full file system under the state directory must not disable the lockouts. The
/// real daemon runs in a private mount namespace with a small tmpfs (64 inodes) on its state
/// directory; the test fills the remaining inodes through `/proc/<pid>/root`, as an ordinary user
/// fills a shared `/var` with empty files. Every attempt is counted on disk before it is made, so
/// while nothing can be written nothing is tried: no finger is scanned, no passcode hashed, and a
/// right passcode is refused exactly like a wrong one. The account is `nobody` (uid 65534).
@Suite(.onOwnThreads, .serialized, .timeLimit(.minutes(2)))
struct FullFileSystemTests {
    static let user = "nobody"
    static let uid = "65534"

    /// The daemon on a 64-inode tmpfs mounted on its state directory, in a mount namespace of its own.
    static func daemon() throws -> DaemonHarness {
        // The script finds the state directory among the daemon's arguments, mounts, then becomes the daemon.
        let script = """
            prev=; for a in "$@"; do [ "$prev" = --state-dir ] && state=$a; prev=$a; done
            mkdir -p "$state" && mount -t tmpfs -o size=1m,nr_inodes=64,mode=0700 tmpfs "$state" && exec "$@"
            """
        return try DaemonHarness(
            extraArguments: ["--linger-ms", "-1"],
            launcher: ["/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script, "sh"])
    }

    /// The state directory as the daemon sees it, inside its mount namespace.
    static func stateSeenByDaemon(_ d: DaemonHarness) -> String {
        "/proc/\(d.process!.processIdentifier)/root\(d.stateDirectory)"
    }

    /// Creates empty files until the file system has no inode left; returns their paths.
    static func fill(_ d: DaemonHarness) throws -> [String] {
        var made: [String] = []
        let dir = stateSeenByDaemon(d)
        while made.count < 1000 {
            let path = "\(dir)/filler-\(made.count)"
            let fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0o600)
            if fd < 0 {
                guard errno == ENOSPC else { throw HarnessError.setup("filling \(path): errno \(errno)") }
                return made
            }
            close(fd)
            made.append(path)
        }
        throw HarnessError.setup("the state directory's file system did not fill up")
    }

    @Test func finger_whenTheStateFileSystemIsFull_isRefusedAtItsTouchUntilItCanBeCounted() async throws {
        let d = try Self.daemon()
        try await d.enroll(user: Self.user, printID: "owner")
        let fillers = try Self.fill(d)
        // The owner's own finger: before issue 13 it matched without any write (a miss was never
        // recorded either: unlimited guessing). Since issue 26 the wait writes nothing and the
        // touch is counted when the reader reports it: that write fails, so its answer is never told.
        try d.simulate("touch", "owner")
        let refused = try d.ctl(["verify", "--timeout", "10"], asUser: Self.uid)
        #expect(refused.status == 2, "an attempt that cannot be counted was answered: \(refused.out)")
        #expect(refused.err.contains("The attempt could not be recorded"), "\(refused.err)")
        #expect(d.daemonLog.contains("cannot record the state of nobody"), "\(d.daemonLog)")
        // One inode free: the touch is counted, and the finger accepted.
        unlink(fillers[0])
        try d.simulate("touch", "owner")
        let counted = try d.ctl(["verify", "--timeout", "10"], asUser: Self.uid)
        #expect(counted.status == 0, "\(counted.err)\n\(d.daemonLog)")
    }

    @Test func passcode_whenTheStateFileSystemIsFull_rightAndWrongAreRefusedAlike() throws {
        let d = try Self.daemon()
        #expect(try d.perform(.passcodeSet(user: Self.user, passcode: "the right one", oldPasscode: nil)).0.isSuccess)
        let fillers = try Self.fill(d)
        // An owner-policy evaluation (no finger enrolled: the passcode is asked at once).
        let right = try d.ctl(["verify", "--passcode", "--timeout", "10"], asUser: Self.uid, stdin: "the right one\n")
        let wrong = try d.ctl(["verify", "--passcode", "--timeout", "10"], asUser: Self.uid, stdin: "a wrong one\n")
        #expect(right.status != 0, "a passcode was accepted while its attempt could not be counted")
        #expect(right.status == wrong.status && right.err == wrong.err, "right: \(right.err) wrong: \(wrong.err)")
        #expect(right.err.contains("The attempt could not be recorded"), "\(right.err)")
        // Changing it: the current passcode is checked only once its attempt is counted.
        let changeRight = try d.ctl(["passcode", "change"], asUser: Self.uid, stdin: "the right one\nanother one\n")
        let changeWrong = try d.ctl(["passcode", "change"], asUser: Self.uid, stdin: "a wrong one\nanother one\n")
        #expect(changeRight.status != 0)
        #expect(
            changeRight.status == changeWrong.status && changeRight.err == changeWrong.err,
            "right: \(changeRight.err) wrong: \(changeWrong.err)")
        // Space again: nothing was counted while full, and the right passcode works.
        unlink(fillers[0])
        let after = try d.ctl(["verify", "--passcode", "--timeout", "10"], asUser: Self.uid, stdin: "the right one\n")
        #expect(after.status == 0, "\(after.err)\n\(d.daemonLog)")
    }
}
