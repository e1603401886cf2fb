// SPDX-License-Identifier: Apache-2.0
import ArgumentParser

@main
struct LocalAuthCtl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "localauthctl",
        abstract: "Enrol fingers and manage localauthd.",
        discussion: """
            Finds the daemon through $LOCALAUTHD_SOCKET, else /run/localauthd/socket.
            Passcodes are read from the terminal without echo, or from standard input when it is not a terminal.

            Exit codes:
              0  success (for verify: the finger matched)
              1  authentication failed: no match, wrong passcode, cancelled
              2  biometrics unavailable: no reader, nothing enrolled, locked out, no passcode set
              3  not authorised for this account or operation
              4  the daemon cannot be reached or broke the protocol
              5  refused: invalid request, not found, already enrolled, busy, timed out, internal error
             64  invalid command line
            """,
        subcommands: [
            Devices.self, Enroll.self, Verify.self, List.self, Delete.self, Status.self, Simulate.self, Passcode.self,
            Lockout.self, Right.self, ImportFprintd.self,
        ])
}
