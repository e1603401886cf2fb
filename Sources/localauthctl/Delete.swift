// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import LocalAuthLocalization

struct Delete: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: tr("Delete an enrolled finger, or all of them."))
    @OptionGroup var connection: ClientOptions
    @OptionGroup var user: UserOption
    @Option(help: ArgumentHelp(tr("The finger to delete.")))
    var finger: String?
    @Flag(help: ArgumentHelp(tr("Delete every finger.")))
    var all = false
    func validate() throws {
        _ = try fingerName(finger)
        guard all != (finger != nil) else { throw ValidationError(tr("name one --finger, or --all")) }
    }
    func run() throws {
        try connection.run(.delete(user: user.user, finger: try fingerName(finger), all: all))
    }
}
