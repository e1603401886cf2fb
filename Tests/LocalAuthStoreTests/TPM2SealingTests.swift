// SPDX-License-Identifier: Apache-2.0
import Glibc
import LocalAuthCrypto
import Testing

@testable import LocalAuthStore

/// Sealing with a TPM2 through `systemd-creds`, against a software TPM (`swtpm`, its state in a
/// temporary directory): the key is sealed by the TPM, the state directory opens again with that
/// TPM, and a second TPM ("another machine") cannot open it. `make test` installs swtpm
/// (scripts/ensure-deps.sh); without it these tests fail, they do not skip.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct TPM2SealingTests {
    /// One swtpm process on a socket under `directory`; killed by `stop`.
    final class SoftwareTPM {
        let directory: String
        let pid: pid_t
        var tcti: String { "swtpm:path=\(directory)/sock" }

        init(in directory: String) throws {
            self.directory = directory
            _ = mkdir(directory, 0o700)
            #expect(mkdir(directory + "/tpm-state", 0o700) == 0)
            try Self.run(
                "/usr/bin/swtpm_setup", ["--tpm2", "--tpmstate", directory + "/tpm-state", "--createek", "--overwrite"])
            try Self.run(
                "/usr/bin/swtpm",
                [
                    "socket", "--tpm2", "--tpmstate", "dir=\(directory)/tpm-state", "--server",
                    "type=unixio,path=\(directory)/sock", "--ctrl", "type=unixio,path=\(directory)/sock.ctrl",
                    "--flags", "startup-clear", "--daemon", "--pid", "file=\(directory)/pid",
                ])
            guard let text = try? String(decoding: readBytes(directory + "/pid"), as: UTF8.self),
                let pid = pid_t(text.filter(\.isNumber))
            else { throw StoreError.sealing("swtpm wrote no pid file") }
            self.pid = pid
        }

        /// swtpm (0.7.1) ignores SIGTERM while it serves: SIGKILL, then wait until it is gone.
        func stop() {
            kill(pid, SIGKILL)
            for _ in 0..<100 where kill(pid, 0) == 0 { usleep(20_000) }  // waits for swtpm to exit: no event to wait on
        }

        static func run(_ path: String, _ arguments: [String]) throws {
            let outcome = try Subprocess.run(path, arguments, input: [])
            guard outcome.status == 0 else {
                throw StoreError.sealing("\(path) failed (\(outcome.status)): \(outcome.errorText)")
            }
        }
    }

    @Test func open_withTheSameTPM_opens_andAnotherTPMCannot() throws {
        try withTemporaryDirectory { tmp in
            let tpm = try SoftwareTPM(in: tmp + "/tpm1")
            defer { tpm.stop() }
            let sealing = SealingConfiguration(method: .tpm2, keyFile: tmp + "/unused.key", tpm2Device: tpm.tcti)
            let state = tmp + "/state"
            let store = try EnrollmentStore(stateDirectory: state, sealing: sealing)
            #expect(store.sealingMethod == .tpm2)
            let print = samplePrint()
            _ = try store.addPrint(print, user: "alice")
            #expect(try names(in: state).contains("sealing-key.tpm2"))
            #expect(access(tmp + "/unused.key", F_OK) != 0, "no key file with a TPM")

            // A restart on the same machine (the same TPM) opens everything.
            #expect(try EnrollmentStore(stateDirectory: state, sealing: sealing).allPrints(user: "alice") == [print])

            // Another machine: another TPM. Fails closed, with a clear reason, and changes nothing.
            let other = try SoftwareTPM(in: tmp + "/tpm2")
            defer { other.stop() }
            let before = try names(in: state + "/users/alice")
            var elsewhere = sealing
            elsewhere.tpm2Device = other.tcti
            expectOpenRefused(state, sealing: elsewhere, saying: "cannot unseal")
            #expect(try names(in: state + "/users/alice") == before)
        }
    }

    @Test func open_whenTPM2IsRequiredButAbsent_failsAndMakesNoKeyFile() throws {
        try withTemporaryDirectory { tmp in
            let sealing = SealingConfiguration(
                method: .tpm2, keyFile: tmp + "/machine.key", tpm2Device: "swtpm:path=\(tmp)/no-such-tpm")
            #expect(throws: StoreError.self) { try EnrollmentStore(stateDirectory: tmp + "/state", sealing: sealing) }
            #expect(access(tmp + "/machine.key", F_OK) != 0)
        }
    }

    @Test func open_whenAutoAndTheTPMFails_fallsBackToAKeyFile() throws {
        try withTemporaryDirectory { tmp in
            let sealing = SealingConfiguration(
                method: .auto, keyFile: tmp + "/machine.key", tpm2Device: "swtpm:path=\(tmp)/no-such-tpm")
            let store = try EnrollmentStore(stateDirectory: tmp + "/state", sealing: sealing)
            #expect(store.sealingMethod == .keyFile)
        }
    }
}
