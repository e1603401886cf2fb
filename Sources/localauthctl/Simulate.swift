// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import LocalAuthLocalization

struct Simulate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: tr("Drive the simulated reader of a daemon started with --virtual-reader (root only)."),
        discussion: tr(
            "Actions: touch ID (a finger with print id ID), retry [CODE], error [CODE], unplug, finger-on, finger-off.")
    )
    @OptionGroup var connection: ClientOptions
    @Argument(help: ArgumentHelp(tr("touch, retry, error, unplug, finger-on or finger-off.")))
    var action: String
    @Argument(help: ArgumentHelp(tr("The print id for touch; the code for retry and error.")))
    var argument: String?
    func run() throws {
        try connection.run(.simulate(action: action, argument: argument))
    }
}
