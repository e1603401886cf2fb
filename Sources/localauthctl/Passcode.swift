// SPDX-License-Identifier: Apache-2.0
import ArgumentParser

#if canImport(Glibc)
    import Glibc
#endif

struct Passcode: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Set, change or remove the passcode (the fallback of deviceOwnerAuthentication).",
        subcommands: [Set.self, Change.self, Remove.self])

    struct Set: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Set a passcode: a first one after a touch of your enrolled finger (root: none needed); to change one, use change."
        )
        @OptionGroup var connection: ClientOptions
        @OptionGroup var user: UserOption
        func run() throws {
            guard let new = readPasscode(prompt: "New passcode: ") else {
                fail("no passcode given", code: Exit.refused)
            }
            try connection.run(.passcodeSet(user: user.user, passcode: new, oldPasscode: nil))
        }
    }

    struct Change: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change the passcode: the current one, then the new one.")
        @OptionGroup var connection: ClientOptions
        @OptionGroup var user: UserOption
        func run() throws {
            let old = getuid() == 0 ? nil : readPasscode(prompt: "Current passcode: ")
            guard let new = readPasscode(prompt: "New passcode: ") else {
                fail("no passcode given", code: Exit.refused)
            }
            try connection.run(.passcodeSet(user: user.user, passcode: new, oldPasscode: old))
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove the passcode.")
        @OptionGroup var connection: ClientOptions
        @OptionGroup var user: UserOption
        func run() throws {
            let old = getuid() == 0 ? nil : readPasscode(prompt: "Current passcode: ")
            try connection.run(.passcodeRemove(user: user.user, oldPasscode: old))
        }
    }
}
