// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import LocalAuthLocalization

#if canImport(Glibc)
    import Glibc
#endif

struct Passcode: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: tr("Set, change or remove the passcode (the fallback of deviceOwnerAuthentication)."),
        subcommands: [Set.self, Change.self, Remove.self])

    struct Set: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: tr(
                "Set a passcode: a first one after a touch of your enrolled finger (root: none needed); to change one, use change."
            ))
        @OptionGroup var connection: ClientOptions
        @OptionGroup var user: UserOption
        func run() throws {
            guard let new = readPasscode(prompt: tr("New passcode: ")) else {
                fail(tr("no passcode given"), code: Exit.refused)
            }
            try connection.run(.passcodeSet(user: user.user, passcode: new, oldPasscode: nil))
        }
    }

    struct Change: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: tr("Change the passcode: the current one, then the new one."))
        @OptionGroup var connection: ClientOptions
        @OptionGroup var user: UserOption
        func run() throws {
            let old = getuid() == 0 ? nil : readPasscode(prompt: tr("Current passcode: "))
            guard let new = readPasscode(prompt: tr("New passcode: ")) else {
                fail(tr("no passcode given"), code: Exit.refused)
            }
            try connection.run(.passcodeSet(user: user.user, passcode: new, oldPasscode: old))
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: tr("Remove the passcode."))
        @OptionGroup var connection: ClientOptions
        @OptionGroup var user: UserOption
        func run() throws {
            let old = getuid() == 0 ? nil : readPasscode(prompt: tr("Current passcode: "))
            try connection.run(.passcodeRemove(user: user.user, oldPasscode: old))
        }
    }
}
