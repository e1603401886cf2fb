// SPDX-License-Identifier: Apache-2.0
import Glibc
import Testing

@testable import LocalAuthStore

/// The helper the TPM2 method runs (`systemd-creds`) starts with the signals as a fresh program
/// has them, whatever the daemon's thread has blocked or ignored: a stop signal to the service's
/// processes stops a hung `systemd-creds` at once, instead of the daemon waiting out its limits (up to 60 s).
/// Serialized: the tests change SIGPIPE's disposition, which the whole process shares.
@Suite(.serialized) struct SealingHelperTests {
    /// A stand-in for `systemd-creds`: writes its own `SigBlk:` and `SigIgn:` lines to `report`,
    /// then passes its input through (encrypt and decrypt alike). The shell reads its status with
    /// builtins: while it waits for a child of its own it blocks every signal, which a `grep` of
    /// `/proc/$$/status` would then see.
    static func reportingHelper(in tmp: String, report: String) throws -> String {
        let path = tmp + "/systemd-creds"
        let script = """
            #!/bin/sh
            while read -r line; do
                case "$line" in SigBlk:* | SigIgn:*) echo "$line" >> '\(report)' ;; esac
            done < /proc/$$/status
            exec cat

            """
        try writeRaw(Array(script.utf8), to: path, mode: 0o700)
        return path
    }

    /// Runs `body` on this thread with every signal blocked and SIGPIPE ignored, as the daemon's
    /// threads run (libdispatch's workers block every signal; `serve` ignores SIGPIPE); restores both.
    static func withDaemonSignals<T>(_ body: () throws -> T) rethrows -> T {
        var ignore = sigaction()
        ignore.__sigaction_handler.sa_handler = SIG_IGN
        var savedPipe = sigaction()
        sigaction(SIGPIPE, &ignore, &savedPipe)
        defer { sigaction(SIGPIPE, &savedPipe, nil) }
        var all = sigset_t()
        sigfillset(&all)
        var saved = sigset_t()
        pthread_sigmask(SIG_SETMASK, &all, &saved)
        // Unblocked first: a SIGPIPE a write raised meanwhile is pending, and discarded while ignored.
        defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
        return try body()
    }

    @Test func sealing_whenTheDaemonsThreadBlocksSignals_startsSystemdCredsWithNoneBlockedOrIgnored() throws {
        try withTemporaryDirectory { tmp in
            let report = tmp + "/signals"
            let helper = try Self.reportingHelper(in: tmp, report: report)
            let sealing = SealingConfiguration(method: .tpm2, keyFile: tmp + "/unused.key", systemdCreds: helper)
            // The first open seals a new key (encrypt), the second unseals it (decrypt).
            let store = try Self.withDaemonSignals {
                try EnrollmentStore(stateDirectory: tmp + "/state", sealing: sealing)
            }
            #expect(store.sealingMethod == .tpm2)
            _ = try Self.withDaemonSignals { try EnrollmentStore(stateDirectory: tmp + "/state", sealing: sealing) }

            let lines = String(decoding: try readBytes(report), as: UTF8.self).split(separator: "\n")
            #expect(lines.count == 4, "two runs, two lines each: \(lines)")
            for line in lines {
                let mask = line.split(separator: "\t").last.flatMap { UInt64($0, radix: 16) }
                if line.hasPrefix("SigBlk:") {
                    #expect(mask == 0, "\(line)")
                } else {
                    // Signals 1–31; glibc's posix_spawn leaves its own two (32, 33) ignored in the child.
                    #expect(mask.map { $0 & 0x7fff_ffff } == 0, "\(line)")
                }
            }
        }
    }

    /// A stop of the service sends SIGTERM to every process of its unit, `systemd-creds` too: it
    /// ends at once, and the start fails saying why. (With the daemon's mask inherited it ran on,
    /// SIGTERM pending, here 60 s until its `sleep` ended: 30 s without output, then 30 s to exit.)
    @Test func sealing_whenSystemdCredsGetsSIGTERM_endsAtOnceAndTheErrorSaysSo() throws {
        try withTemporaryDirectory { tmp in
            // SIGTERM to itself, as systemd's stop would send it; then what a hung TPM looks like.
            let helper = tmp + "/systemd-creds"
            try writeRaw(Array("#!/bin/sh\nkill -TERM $$\nexec sleep 60\n".utf8), to: helper, mode: 0o700)
            let sealing = SealingConfiguration(method: .tpm2, keyFile: tmp + "/unused.key", systemdCreds: helper)
            var started = timespec()
            clock_gettime(CLOCK_MONOTONIC, &started)
            let error = #expect(throws: StoreError.self) {
                try Self.withDaemonSignals { try EnrollmentStore(stateDirectory: tmp + "/state", sealing: sealing) }
            }
            var ended = timespec()
            clock_gettime(CLOCK_MONOTONIC, &ended)
            let seconds = Double(ended.tv_sec - started.tv_sec) + Double(ended.tv_nsec - started.tv_nsec) / 1e9
            #expect(seconds < 5, "systemd-creds ran \(seconds) s after its SIGTERM")
            #expect(
                "\(String(describing: error))".contains("ended by signal \(SIGTERM)"), "\(String(describing: error))")
        }
    }
}
