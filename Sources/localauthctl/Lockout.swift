// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import LocalAuthLocalization

struct Lockout: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: tr("Lockouts."), subcommands: [Reset.self])
    struct Reset: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: tr("Clear an account's lockouts and reuse windows (root only)."))
        @OptionGroup var connection: ClientOptions
        @Option(help: ArgumentHelp(tr("The account.")))
        var user: String
        func run() throws {
            try connection.run(.lockoutReset(user: user))
        }
    }
}
