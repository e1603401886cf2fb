// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import LocalAuthLocalization
import LocalAuthProtocol

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: tr("List enrolled fingers."))
    @OptionGroup var connection: ClientOptions
    @OptionGroup var user: UserOption
    func run() throws {
        try connection.run(.list(user: user.user), print: Self.show)
    }

    static func show(_ result: RequestResult) {
        for finger in result.fields.strings(.finger) { print(Echo.printable(finger)) }
    }
}
