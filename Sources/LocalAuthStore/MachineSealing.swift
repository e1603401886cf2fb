// SPDX-License-Identifier: Apache-2.0
import Glibc
import LocalAuthCrypto

/// Where the machine's data key comes from (`docs/adr/0006-sealing.md`).
public struct SealingConfiguration: Sendable, Equatable {
    public enum Method: String, Sendable, CaseIterable {
        /// The TPM2 when the machine has one (`/dev/tpmrm0`, or `tpm2Device` set), else a key file.
        case auto
        /// The key sealed by the TPM2 through `systemd-creds`; fails when there is none.
        case tpm2
        /// A root-only key file outside the state directory.
        case keyFile = "key-file"
    }

    public var method: Method
    /// The key file; nil: `sealing.key` in the key directory beside the state directory
    /// (`/var/lib/localauthd-key/sealing.key`, systemd's second `StateDirectory=`).
    public var keyFile: String?
    /// A tpm2-tss TCTI for `systemd-creds --tpm2-device=` (`device:/dev/tpmrm0`, `swtpm:path=…`);
    /// nil: systemd's default.
    public var tpm2Device: String?
    /// The `systemd-creds` binary.
    public var systemdCreds: String

    public init(
        method: Method = .auto, keyFile: String? = nil, tpm2Device: String? = nil,
        systemdCreds: String = "/usr/bin/systemd-creds"
    ) {
        self.method = method
        self.keyFile = keyFile
        self.tpm2Device = tpm2Device
        self.systemdCreds = systemdCreds
    }

    /// The directory the default key file lives in: the state directory's path with `-key`
    /// appended, a directory of its own so that systemd can make it writable under
    /// `ProtectSystem=strict` while it stays outside the state directory.
    static func keyDirectory(stateDirectory: String) -> String { stateDirectory + "-key" }
    static let keyFileName = "sealing.key"

    func keyFilePath(stateDirectory: String) -> String {
        keyFile ?? Self.keyDirectory(stateDirectory: stateDirectory) + "/" + Self.keyFileName
    }

    /// Where versions before 0.2 kept the default key file: the state directory's path with `.key`
    /// appended (`/var/lib/localauthd.key`), a place the shipped unit cannot write.
    static func legacyKeyFilePath(stateDirectory: String) -> String { stateDirectory + ".key" }
}

/// How the state directory in use is sealed, for status lines and tests.
public enum SealingMethod: String, Sendable, Equatable {
    case tpm2
    case keyFile = "key-file"
}

/// The state directory's sealing record (`<state>/sealing`) and the key it names.
///
///     localauthd-sealing 1
///     method=tpm2 | key-file
///     check=<HMAC-SHA-256 of a fixed label under the key, 64 hex>
///     migrated=0 | 1
///     mac=<HMAC-SHA-256 under the key of the lines above, 64 hex>
///     crc32=…
///
/// The `mac=` line (issue 26) makes the record the key's own: flipped offline to `migrated=0`, it
/// no longer opens, so the next start cannot be made to seal planted plain prints. A record without
/// it was written before; it is rewritten with one, and never seals plain prints.
///
/// With `tpm2`, `<state>/sealing-key.tpm2` holds the key as a systemd credential sealed by the TPM
/// (with systemd's default policy on PCR 7). With `key-file`, the key is a
/// root-only file outside the state directory. Either way, the state directory alone does not
/// open: copied to another machine it fails closed with `StoreError.sealing`.
struct SealingRecord: Equatable {
    static let fileName = "sealing"
    static let tpm2CredentialName = "sealing-key.tpm2"
    static let credentialName = "localauthd-sealing"
    static let header = "localauthd-sealing 1"
    static let keyHeader = "localauthd-sealing-key 1"
    /// What the `mac=` HMAC is computed for, apart from anything else the key authenticates.
    static let macLabel = "localauthd sealing record 1"

    var method: SealingMethod
    var check: [UInt8]
    var migrated: Bool
    /// HMAC-SHA-256 under the machine's key of `authenticatedBody`; nil in a record written before
    /// issue 26.
    var mac: [UInt8]? = nil

    /// The lines the HMAC covers: everything but the `mac=` and `crc32=` lines.
    var authenticatedBody: [UInt8] {
        Array(
            "\(Self.header)\nmethod=\(method.rawValue)\ncheck=\(Hex.encode(check))\nmigrated=\(migrated ? 1 : 0)\n".utf8
        )
    }

    /// This record with its HMAC under `sealer`'s key.
    func authenticated(by sealer: Sealer) -> SealingRecord {
        var record = self
        record.mac = sealer.authenticationCode(for: authenticatedBody, label: Self.macLabel)
        return record
    }

    /// True when the record carries an HMAC and it holds under `sealer`'s key.
    func isAuthentic(under sealer: Sealer) -> Bool {
        guard let mac else { return false }
        return sealer.isAuthentic(mac, for: authenticatedBody, label: Self.macLabel)
    }

    func encode() -> [UInt8] {
        Seal.seal(authenticatedBody + (mac.map { Array("mac=\(Hex.encode($0))\n".utf8) } ?? []))
    }

    static func decode(_ bytes: [UInt8]) -> SealingRecord? {
        guard case .success(let body) = Seal.open(bytes) else { return nil }
        let lines = String(decoding: body, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count == 5 || lines.count == 6, lines[0] == header, lines[lines.count - 1].isEmpty,
            lines[1].hasPrefix("method="), let method = SealingMethod(rawValue: String(lines[1].dropFirst(7))),
            lines[2].hasPrefix("check="), let check = Hex.decode(lines[2].dropFirst(6)), check.count == 32,
            lines[3] == "migrated=0" || lines[3] == "migrated=1"
        else { return nil }
        var mac: [UInt8]?
        if lines.count == 6 {
            guard lines[4].hasPrefix("mac="), let code = Hex.decode(lines[4].dropFirst(4)), code.count == 32 else {
                return nil
            }
            mac = code
        }
        return SealingRecord(method: method, check: check, migrated: lines[3] == "migrated=1", mac: mac)
    }

    static func encodeKeyFile(_ key: [UInt8]) -> [UInt8] {
        Seal.seal(Array("\(keyHeader)\nkey=\(Hex.encode(key))\n".utf8))
    }

    static func decodeKeyFile(_ bytes: [UInt8]) -> [UInt8]? {
        guard case .success(let body) = Seal.open(bytes) else { return nil }
        let lines = String(decoding: body, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count == 3, lines[0] == keyHeader, lines[1].hasPrefix("key="), lines[2].isEmpty,
            let key = Hex.decode(lines[1].dropFirst(4)), key.count == Sealer.keySize
        else { return nil }
        return key
    }
}

/// `systemd-creds` with the TPM2: seal (`encrypt --with-key=tpm2`) and unseal (`decrypt`).
enum TPM2Credential {
    static func arguments(_ verb: String, _ configuration: SealingConfiguration) -> [String] {
        var arguments = [verb, "--name=\(SealingRecord.credentialName)"]
        // systemd's default PCR policy (PCR 7, the Secure Boot state): systemd 252 cannot decrypt
        // what it encrypted with an empty PCR list ("TPM2 PCR bank invalid"; measured, ADR 0006).
        if verb == "encrypt" { arguments += ["--with-key=tpm2"] }
        if let device = configuration.tpm2Device { arguments.append("--tpm2-device=\(device)") }
        return arguments + ["-", "-"]
    }

    static func seal(_ key: [UInt8], _ configuration: SealingConfiguration) throws(StoreError) -> [UInt8] {
        let outcome = try Subprocess.run(configuration.systemdCreds, arguments("encrypt", configuration), input: key)
        guard outcome.status == 0, !outcome.output.isEmpty else {
            throw .sealing("the TPM2 could not seal the key (systemd-creds: \(firstLine(outcome.errorText)))")
        }
        return outcome.output
    }

    static func unseal(_ credential: [UInt8], _ configuration: SealingConfiguration) throws(StoreError) -> [UInt8] {
        let outcome = try Subprocess.run(
            configuration.systemdCreds, arguments("decrypt", configuration), input: credential)
        guard outcome.status == 0, outcome.output.count == Sealer.keySize else {
            throw .sealing(
                "this machine's TPM2 cannot unseal the key (systemd-creds: \(firstLine(outcome.errorText))); "
                    + "was the state directory moved from another machine?")
        }
        return outcome.output
    }

    /// The last non-empty line: systemd-creds prints warnings before its error.
    private static func firstLine(_ text: String) -> String {
        let lines = text.split(separator: "\n").filter { !$0.isEmpty }
        return lines.last.map(String.init) ?? "no message"
    }
}
