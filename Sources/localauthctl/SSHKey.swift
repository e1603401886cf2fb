// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import LocalAuthClient
import LocalAuthLocalization
import LocalAuthProtocol
import SSHAgentProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// `localauthctl ssh-key …`: ssh keys (ECDSA P-256) made and kept by the daemon, used only after a
/// finger, through `localauthctl ssh-agent`.
struct SSHKey: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ssh-key",
        abstract: tr("ssh keys that only a finger releases, for localauthctl ssh-agent."),
        subcommands: [Create.self, ListKeys.self, DeleteKey.self])

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: tr("Make a new ssh key in the daemon and print its public key line."))
        @OptionGroup var connection: ClientOptions
        @Argument(help: ArgumentHelp(tr("The key's name: letters, digits, '.', '_', '-' or '@'.")))
        var name: String
        @Option(help: ArgumentHelp(tr("biometry, biometry-current-set or biometry-or-passcode.")))
        var requirement = "biometry"
        @Flag(help: ArgumentHelp(tr("Sign for forwarded agent connections (ssh -A) too.")))
        var allowForwarding = false
        @Option(
            help: ArgumentHelp(
                tr("Seconds a finger stays good for this key's next signatures through the agent (0-300, default 0).")
            ))
        var reuse: Int64 = 0

        func validate() throws {
            guard SSHKeyEntry.isValidName(name) else {
                throw ValidationError(tr("'%s' is not a key name", .text(name)))
            }
            guard requirement != "passcode" else {
                throw ValidationError(
                    tr("an ssh key needs a finger: use biometry, biometry-current-set or biometry-or-passcode"))
            }
            _ = try Right.requirement(requirement)
            guard (0...300).contains(reuse) else { throw ValidationError(tr("--reuse takes 0 to 300 seconds")) }
        }

        func run() throws {
            let entry = SSHKeyEntry(name: name, allowForwarding: allowForwarding, reuseSeconds: reuse)
            let result = SSHKey.perform(
                .rightSave(
                    user: nil, identifier: entry.identifier, requirement: try Right.requirement(requirement),
                    secret: nil), socket: connection.socket)
            guard let point = result.fields.bytes(.publicKey) else {
                // English: a protocol detail
                fail("RIGHT_SAVE answered without a public key", code: Exit.unreachable)
            }
            var entries = SSHKeyFile.load().filter { $0.name != name }
            entries.append(entry)
            do {
                try SSHKeyFile.save(entries)
            } catch {
                fail(tr("cannot write %s", .text(error.text)), code: Exit.refused)
            }
            print(SSHECDSAKey.publicKeyLine(x963: point, comment: "localauth:" + name))
        }
    }

    struct ListKeys: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: tr("Print the public key line of each ssh key (for authorized_keys)."))
        @OptionGroup var connection: ClientOptions
        func run() throws {
            for key in SSHAgentKeys.load(socket: connection.socket, log: { printError($0) }) {
                print(SSHECDSAKey.publicKeyLine(x963: key.point, comment: "localauth:" + key.entry.name))
            }
        }
    }

    struct DeleteKey: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete", abstract: tr("Delete an ssh key: the daemon destroys it."))
        @OptionGroup var connection: ClientOptions
        @Argument var name: String
        func validate() throws {
            guard SSHKeyEntry.isValidName(name) else {
                throw ValidationError(tr("'%s' is not a key name", .text(name)))
            }
        }
        func run() throws {
            let entry = SSHKeyEntry(name: name, allowForwarding: false, reuseSeconds: 0)
            let result = SSHKey.perform(
                .rightRemove(user: nil, identifier: entry.identifier), socket: connection.socket, acceptNotFound: true)
            let entries = SSHKeyFile.load()
            if entries.contains(where: { $0.name == name }) {
                do {
                    try SSHKeyFile.save(entries.filter { $0.name != name })
                } catch {
                    fail(tr("cannot write %s", .text(error.text)), code: Exit.refused)
                }
            } else if result.code != ResultCode.success.rawValue {
                printError("localauthctl: \(result.localizedMessage())")
                Glibc.exit(Exit.code(for: result.code))
            }
        }
    }

    /// One request; a failure is said and ends the process (`acceptNotFound`: notFound comes back).
    static func perform(_ request: Request, socket: String?, acceptNotFound: Bool = false) -> RequestResult {
        do {
            let connection = try DaemonConnection(
                socketPath: socket ?? DaemonConnection.defaultSocketPath, clientName: "localauthctl")
            let result = try connection.perform(request, timeoutMs: 30_000)
            if result.isSuccess || (acceptNotFound && result.resultCode == .notFound) { return result }
            printError("localauthctl: \(result.localizedMessage()) (\(result.resultCode?.name ?? String(result.code)))")
            Glibc.exit(Exit.code(for: result.code))
        } catch {
            fail(error.text(Gettext.shared), code: Exit.unreachable)
        }
    }
}

/// The account's ssh keys as the daemon holds them: the file's names, each with its public key.
struct SSHAgentKeys {
    var entry: SSHKeyEntry
    var point: [UInt8]
    var blob: [UInt8] { SSHECDSAKey.blob(x963: point) }

    /// A name whose right is gone (a biometry-current-set key after the fingers changed) is
    /// said on `log` and left out.
    static func load(socket: String?, log: (String) -> Void) -> [SSHAgentKeys] {
        let entries = SSHKeyFile.load()
        guard !entries.isEmpty else { return [] }
        let connection: DaemonConnection
        do {
            // English: a program's name
            connection = try DaemonConnection(
                socketPath: socket ?? DaemonConnection.defaultSocketPath, clientName: "localauthctl ssh-agent")
        } catch {
            log(error.description)
            return []
        }
        var keys: [SSHAgentKeys] = []
        for entry in entries {
            do {
                let result = try connection.perform(
                    .rightGet(user: nil, identifier: entry.identifier), timeoutMs: 10_000)
                if let point = result.fields.bytes(.publicKey), result.isSuccess, point.count == 65 {
                    keys.append(SSHAgentKeys(entry: entry, point: point))
                } else {
                    // English: the agent's log
                    log("ssh key \(entry.name): \(result.localizedMessage())")
                }
            } catch {
                log(error.description)
                return keys
            }
        }
        return keys
    }
}
