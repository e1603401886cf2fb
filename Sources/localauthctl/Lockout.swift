// SPDX-License-Identifier: Apache-2.0
import ArgumentParser

struct Lockout: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Lockouts.", subcommands: [Reset.self])
    struct Reset: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Clear an account's lockouts and reuse windows (root only).")
        @OptionGroup var connection: ClientOptions
        @Option(help: "The account.")
        var user: String
        func run() throws {
            try connection.run(.lockoutReset(user: user))
        }
    }
}
