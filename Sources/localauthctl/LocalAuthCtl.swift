// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import LocalAuthLocalization

@main
struct LocalAuthCtl: ParsableCommand {
    /// The plain forms of the everyday commands skip swift-argument-parser, whose set-up is half of
    /// the process's CPU time (docs/performance.md); everything else, help, completions and every
    /// error included, goes to it unchanged.
    static func main() {
        if let plain = FastPath.parse(Array(CommandLine.arguments.dropFirst())) { plain.run() }
        main(nil)
    }

    static let configuration = CommandConfiguration(
        commandName: "localauthctl",
        abstract: tr("Enrol fingers and manage localauthd."),
        discussion: [
            tr("Finds the daemon through $LOCALAUTHD_SOCKET, else /run/localauthd/socket."),
            tr("Passcodes are read from the terminal without echo, or from standard input when it is not a terminal."),
            "",
            tr("Exit codes:"),
            "  0  " + tr("success (for verify: the finger matched)"),
            "  1  " + tr("authentication failed: no match, wrong passcode, cancelled"),
            "  2  " + tr("biometrics unavailable: no reader, nothing enrolled, locked out, no passcode set"),
            "  3  " + tr("not authorised for this account or operation"),
            "  4  " + tr("the daemon cannot be reached or broke the protocol"),
            "  5  " + tr("refused: invalid request, not found, already enrolled, busy, timed out, internal error"),
            " 64  " + tr("invalid command line"),
        ].joined(separator: "\n"),
        subcommands: [
            Devices.self, Enroll.self, Verify.self, List.self, Delete.self, Status.self, Simulate.self, Passcode.self,
            Lockout.self, Right.self, SSHKey.self, SSHAgentCommand.self, ImportFprintd.self,
        ])
}
