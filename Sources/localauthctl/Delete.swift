// SPDX-License-Identifier: Apache-2.0
import ArgumentParser

struct Delete: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Delete an enrolled finger, or all of them.")
    @OptionGroup var connection: ClientOptions
    @OptionGroup var user: UserOption
    @Option(help: "The finger to delete.")
    var finger: String?
    @Flag(help: "Delete every finger.")
    var all = false
    func validate() throws {
        _ = try fingerName(finger)
        guard all != (finger != nil) else { throw ValidationError("name one --finger, or --all") }
    }
    func run() throws {
        try connection.run(.delete(user: user.user, finger: try fingerName(finger), all: all))
    }
}
