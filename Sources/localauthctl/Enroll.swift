// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import LocalAuthLocalization

struct Enroll: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: tr("Enrol a finger."),
        discussion: tr(
            "A first finger needs root (sudo localauthctl enroll --user NAME). A later one needs proof that you are present first: an enrolled finger, or (after a finger that does not match) the passcode."
        )
    )
    @OptionGroup var connection: ClientOptions
    @OptionGroup var user: UserOption
    @Option(help: ArgumentHelp(tr("right-index-finger, left-thumb, … (default: the first free one).")))
    var finger: String?
    func validate() throws { _ = try fingerName(finger) }
    func run() throws {
        try connection.run(.enroll(user: user.user, finger: try fingerName(finger), passcodeCapable: true))
    }
}
