// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import LocalAuthClient
import LocalAuthLocalization
import LocalAuthProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// `localauthctl right …`: Apple's `LARightStore` from the shell — an app's secret and P-256 key,
/// released or used only after a finger (or the passcode, as the right requires).
struct Right: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: tr("Secrets and keys that only a finger releases (LARight)."),
        discussion: tr(
            "Requirements: biometry (any enrolled finger), biometry-current-set (destroyed when the fingers change), biometry-or-passcode, passcode. A right belongs to the account and the program that saved it: rights saved here are localauthctl's, not an app's. Root may remove any."
        ),
        subcommands: [Save.self, Show.self, Secret.self, Sign.self, Remove.self])

    static func requirement(_ name: String) throws -> RightRequirement {
        switch name {
        case "biometry": .biometryAny
        case "biometry-current-set": .biometryCurrentSet
        case "biometry-or-passcode": .biometryOrPasscode
        case "passcode": .devicePasscode
        default:
            throw ValidationError(
                tr(
                    "'%s' is not a requirement; use biometry, biometry-current-set, biometry-or-passcode or passcode",
                    .text(name)))
        }
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// Standard input, whole (at most 1024 bytes: a field's limit).
    static func standardInput() -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1025)
        while bytes.count <= 1024 {
            let n = read(STDIN_FILENO, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            bytes += buffer[0..<n]
        }
        guard bytes.count <= 1024 else { fail(tr("standard input is longer than 1024 bytes"), code: Exit.refused) }
        return bytes
    }

    struct Save: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: tr("Save a new right with a fresh key; --secret-stdin stores standard input as its secret."))
        @OptionGroup var connection: ClientOptions
        @OptionGroup var user: UserOption
        @Argument(help: ArgumentHelp(tr("The right's identifier, e.g. com.example.vault.")))
        var identifier: String
        @Option(help: ArgumentHelp(tr("biometry, biometry-current-set, biometry-or-passcode or passcode.")))
        var requirement = "biometry-current-set"
        @Flag(help: ArgumentHelp(tr("Store standard input (at most 1024 bytes) as the right's secret.")))
        var secretStdin = false
        func validate() throws { _ = try Right.requirement(requirement) }
        func run() throws {
            let secret = secretStdin ? Right.standardInput() : nil
            try connection.run(
                .rightSave(
                    user: user.user, identifier: identifier, requirement: try Right.requirement(requirement),
                    secret: secret)
            ) { result in
                if let key = result.fields.bytes(.publicKey) { print(tr("public key: %s", .text(Right.hex(key)))) }
            }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: tr("Show a right's requirement and public key."))
        @OptionGroup var connection: ClientOptions
        @OptionGroup var user: UserOption
        @Argument var identifier: String
        func run() throws {
            try connection.run(.rightGet(user: user.user, identifier: identifier)) { result in
                if let raw = result.fields.int(.requirement) { print(tr("requirement: %d", .number(raw))) }
                if let key = result.fields.bytes(.publicKey) { print(tr("public key: %s", .text(Right.hex(key)))) }
            }
        }
    }

    /// What `secret` and `sign` take: the daemon, the right, how long to wait.
    struct RightUse: ParsableArguments {
        @OptionGroup var connection: ClientOptions
        @Argument var identifier: String
        @Option(help: ArgumentHelp(tr("Seconds to wait.")))
        var timeout: Int64 = 30

        /// A RIGHT_USE of `operation`, the passcode accepted; its data printed in hex when `hex`.
        func run(
            _ operation: RightOperation, algorithm: String? = nil, data: [UInt8]? = nil, reason: String, hex: Bool
        ) -> Never {
            Right.run(
                connection,
                RightUseOptions(
                    // English: the command
                    identifier: identifier, operation: operation, algorithm: algorithm, data: data,
                    // English: the command
                    prompt: PromptOptions(
                        service: "localauthctl right", reason: reason, flags: [.passcodeCapable],
                        timeoutMs: timeout * 1000)),
                hex: hex)
        }
    }

    struct Secret: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: tr("Ask for a finger (or the passcode) and write the right's secret to standard output."))
        @OptionGroup var use: RightUse
        func run() throws {
            // English: the command
            use.run(.loadSecret, reason: "localauthctl right secret", hex: false)
        }
    }

    struct Sign: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                tr("Ask for a finger and sign standard input (ECDSA P-256, SHA-256, DER); prints the signature in hex.")
        )
        @OptionGroup var use: RightUse
        func run() throws {
            use.run(
                // English: the command
                .sign, algorithm: "ecdsaSignatureMessageX962SHA256", data: Right.standardInput(),
                // English: the command
                reason: "localauthctl right sign", hex: true)
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: tr("Remove a right, or --all of an account's."))
        @OptionGroup var connection: ClientOptions
        @OptionGroup var user: UserOption
        @Argument var identifier: String?
        @Flag(help: ArgumentHelp(tr("Remove every right of the account.")))
        var all = false
        func validate() throws {
            guard all != (identifier != nil) else { throw ValidationError(tr("name one right, or --all")) }
        }
        func run() throws {
            try connection.run(.rightRemove(user: user.user, identifier: identifier))
        }
    }

    /// Runs a RIGHT_USE: prompts on standard error, the data alone on standard output.
    static func run(_ connection: ClientOptions, _ options: RightUseOptions, hex: Bool) -> Never {
        ClientOptions.perform(.rightUse(options), socket: connection.socket, timeoutMs: options.timeoutMs + 10_000) {
            event in
            if !connection.quiet, event.kind != .passcodeNeeded { printError(event.localizedMessage()) }
        } success: { result in
            let data = result.fields.bytes(.data) ?? []
            if hex {
                print(Right.hex(data))
            } else {
                _ = data.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
            }
        }
    }
}
