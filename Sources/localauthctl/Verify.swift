// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import LocalAuthLocalization
import LocalAuthProtocol

struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: tr("Ask for a finger; exit 0 only on a match."))
    @OptionGroup var connection: ClientOptions
    @OptionGroup var user: UserOption
    @Flag(help: ArgumentHelp(tr("Allow the passcode as a fallback (deviceOwnerAuthentication).")))
    var passcode = false
    @Option(help: ArgumentHelp(tr("Seconds to wait for a finger.")))
    var timeout: Int64 = 30
    func validate() throws {
        guard (1...300).contains(timeout) else { throw ValidationError(tr("--timeout takes 1 to 300 seconds")) }
    }
    func run() throws {
        try connection.run(.evaluate(Self.options(passcode: passcode, user: user.user, seconds: timeout)))
    }

    static func options(passcode: Bool, user: String?, seconds: Int64) -> EvaluateOptions {
        EvaluateOptions(
            policy: passcode ? .deviceOwnerAuthentication : .deviceOwnerAuthenticationWithBiometrics, user: user,
            // English: the command, as the reason
            service: "localauthctl", reason: "localauthctl verify", fallbackTitle: passcode ? nil : "",
            flags: passcode ? [.passcodeCapable] : [], timeoutMs: seconds * 1000)
    }
}
