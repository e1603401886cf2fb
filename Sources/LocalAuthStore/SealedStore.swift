// SPDX-License-Identifier: Apache-2.0
import Glibc
import LocalAuthCrypto

/// The store's side of sealing (`docs/adr/0006-sealing.md`): opening or making the machine's key,
/// the one-time migration of plain prints, and sealing on write / opening on read. Called with the
/// store's lock held.
extension EnrollmentStore {
    var sealingRecordPath: String { stateDirectory + "/" + SealingRecord.fileName }

    /// Opens the machine's key named by `<state>/sealing`, or makes one for a state directory that
    /// has none; then seals whatever plain prints an older version left (once: the record says so).
    func openSealing(_ configuration: SealingConfiguration) throws(StoreError) {
        var record: SealingRecord
        let sealer: Sealer
        switch Sys.readFile(sealingRecordPath, limit: 4096) {
        case .unreadable(let why):
            throw .sealing("\(sealingRecordPath): \(why)")
        case .bytes(let bytes, let info):
            if let problem = trustProblem(info) { throw .sealing("\(sealingRecordPath): \(problem)") }
            guard let decoded = SealingRecord.decode(bytes) else {
                throw .sealing("\(sealingRecordPath) is damaged; the sealed files cannot be opened without it")
            }
            record = decoded
            guard let opened = Sealer(key: try machineKey(record.method, configuration)),
                opened.checkValue == record.check
            else {
                throw .sealing(
                    "the key this machine has is not the key \(stateDirectory) was sealed with; "
                        + "was the state directory moved from another machine?")
            }
            sealer = opened
            if record.mac != nil {
                guard record.isAuthentic(under: opened) else {
                    throw .sealing(
                        "\(sealingRecordPath) was changed: its HMAC does not hold under this machine's key")
                }
            } else {
                // Written before issue 26, or rewritten offline: its `migrated` flag proves nothing,
                // so plain prints are never sealed on its word.
                if !record.migrated {
                    notice(
                        "\(sealingRecordPath) is not authenticated (an older version's, or changed offline): "
                            + "plain print files are left as they are and not used; enrol those fingers again")
                    record.migrated = true
                }
                record = record.authenticated(by: opened)
                try atomicWrite(record.encode(), directory: stateDirectory, name: SealingRecord.fileName)
            }
        case .missing:
            if let sealed = try firstSealedFile() {
                throw .sealing(
                    "\(sealed) is sealed but \(sealingRecordPath) is missing; was the state directory moved "
                        + "from another machine, or its sealing record deleted?")
            }
            let (key, method) = try makeMachineKey(configuration)
            sealer = Sealer(key: key)!
            record = SealingRecord(method: method, check: sealer.checkValue, migrated: false).authenticated(by: sealer)
            try atomicWrite(record.encode(), directory: stateDirectory, name: SealingRecord.fileName)
            madeKey.withLock { $0 = true }
        }
        sealing.withLock { $0 = (sealer, record.method) }
        if !record.migrated {
            let count = try sealPlainPrints(sealer)
            if count > 0 { notice("sealed \(count) print file(s) that an older version kept in plain form") }
            record.migrated = true
            record = record.authenticated(by: sealer)
            try atomicWrite(record.encode(), directory: stateDirectory, name: SealingRecord.fileName)
        }
    }

    /// The key for an existing record.
    private func machineKey(_ method: SealingMethod, _ configuration: SealingConfiguration) throws(StoreError)
        -> [UInt8]
    {
        switch method {
        case .tpm2:
            let path = stateDirectory + "/" + SealingRecord.tpm2CredentialName
            guard case .bytes(let credential, let info) = Sys.readFile(path, limit: 64 * 1024),
                trustProblem(info) == nil
            else { throw .sealing("\(path) is missing or unreadable; the TPM2-sealed key is gone") }
            return try TPM2Credential.unseal(credential, configuration)
        case .keyFile:
            let path = try keyFileInPlace(configuration)
            switch Sys.readFile(path, limit: 4096) {
            case .missing:
                throw .sealing(
                    "the key file \(path) is missing; was the state directory moved from another machine?")
            case .unreadable(let why): throw .sealing("the key file \(path): \(why)")
            case .bytes(let bytes, let info):
                if let problem = trustProblem(info) { throw .sealing("the key file \(path): \(problem)") }
                guard let key = SealingRecord.decodeKeyFile(bytes) else {
                    throw .sealing("the key file \(path) is damaged")
                }
                return key
            }
        }
    }

    /// A new key for a state directory with no sealing record: the TPM2's when there is one (and
    /// the configuration allows), else a key file (an existing one is reused: one machine, one key).
    private func makeMachineKey(_ configuration: SealingConfiguration) throws(StoreError) -> ([UInt8], SealingMethod) {
        let hasTPM = configuration.tpm2Device != nil || access("/dev/tpmrm0", F_OK) == 0
        if configuration.method == .tpm2 || (configuration.method == .auto && hasTPM) {
            let key = Sealer.generateKey()
            do throws(StoreError) {
                let credential = try TPM2Credential.seal(key, configuration)
                try atomicWrite(credential, directory: stateDirectory, name: SealingRecord.tpm2CredentialName)
                return (key, .tpm2)
            } catch {
                if configuration.method == .tpm2 { throw error }
                notice("\(error); using a key file instead")
            }
        }
        let path = try keyFileInPlace(configuration)
        switch Sys.readFile(path, limit: 4096) {
        case .bytes(let bytes, let info):
            if let problem = trustProblem(info) { throw .sealing("the key file \(path): \(problem)") }
            guard let key = SealingRecord.decodeKeyFile(bytes) else {
                throw .sealing("the key file \(path) is damaged")
            }
            return (key, .keyFile)
        case .unreadable(let why):
            throw .sealing("the key file \(path): \(why)")
        case .missing:
            let key = Sealer.generateKey()
            guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else {
                throw .sealing("the key file \(path) needs an absolute path")
            }
            let directory = String(path[..<slash])
            guard let info = try Sys.statInfo(directory), info.isDirectory else {
                throw .sealing("the key file's directory \(directory) does not exist")
            }
            try atomicWrite(
                SealingRecord.encodeKeyFile(key), directory: directory, name: String(path[path.index(after: slash)...]))
            return (key, .keyFile)
        }
    }

    /// The key file's path. For the default one, its directory (`<state>-key`, 0700) is made when
    /// missing and must be ours and writable by nobody else; a key an older version kept at
    /// `<state>.key` is moved in (copied with the usual atomic write, then the old file removed
    /// where it can be: under the shipped unit `/var/lib` is read-only and the package's postinst
    /// has moved it already).
    func keyFileInPlace(_ configuration: SealingConfiguration) throws(StoreError) -> String {
        let path = configuration.keyFilePath(stateDirectory: stateDirectory)
        guard configuration.keyFile == nil else { return path }
        let directory = SealingConfiguration.keyDirectory(stateDirectory: stateDirectory)
        if let info = try Sys.lstatInfo(directory) {
            if let problem = directoryProblem(info) { throw .sealing("the key directory \(directory): \(problem)") }
        } else {
            _ = try Sys.makeDirectory(directory)
        }
        let legacy = SealingConfiguration.legacyKeyFilePath(stateDirectory: stateDirectory)
        guard case .missing = Sys.readFile(path, limit: 4096) else { return path }
        switch Sys.readFile(legacy, limit: 4096) {
        case .missing: return path
        case .unreadable(let why): throw .sealing("the key file \(legacy): \(why)")
        case .bytes(let bytes, let info):
            if let problem = trustProblem(info) { throw .sealing("the key file \(legacy): \(problem)") }
            try atomicWrite(bytes, directory: directory, name: SealingConfiguration.keyFileName)
            if unlink(legacy) == 0 {
                notice("moved the key file \(legacy) to \(path)")
            } else {
                notice(
                    "copied the key file \(legacy) to \(path); remove the old copy (\(String(cString: strerror(errno))))"
                )
            }
            return path
        }
    }

    /// A sealed print or right in any user's directory, if there is one.
    private func firstSealedFile() throws(StoreError) -> String? {
        for user in try Sys.listDirectory(usersDirectory) where Validation.isSafeName(user) {
            guard try checkUserDirectory(user) else { continue }
            for name in try Sys.listDirectory(userDirectory(user))
            where name.hasSuffix(RightRecord.fileSuffix) || PrintRecord.parseFileName(name) != nil {
                if case .bytes(let bytes, _) = Sys.readFile(
                    userDirectory(user) + "/" + name, limit: Self.maximumPrintFileSize),
                    Sealer.isSealed(bytes) || name.hasSuffix(RightRecord.fileSuffix)
                {
                    return userDirectory(user) + "/" + name
                }
            }
        }
        return nil
    }

    /// Seals every plain print in place (atomic writes: after a crash each file is plain or
    /// sealed, and the next start finishes the job, since the record still says `migrated=0`).
    private func sealPlainPrints(_ sealer: Sealer) throws(StoreError) -> Int {
        var count = 0
        for user in try Sys.listDirectory(usersDirectory) where Validation.isSafeName(user) {
            guard try checkUserDirectory(user) else { continue }
            let directory = userDirectory(user)
            for name in try Sys.listDirectory(directory) where PrintRecord.parseFileName(name) != nil {
                guard
                    case .bytes(let bytes, let info) = Sys.readFile(
                        directory + "/" + name, limit: Self.maximumPrintFileSize),
                    trustProblem(info) == nil, !Sealer.isSealed(bytes)
                else { continue }  // foreign or unreadable files stay as they are: the scan sets them aside
                try atomicWrite(
                    sealer.seal(bytes, context: Self.sealingContext(user: user, name: name)), directory: directory,
                    name: name)
                count += 1
            }
        }
        return count
    }

    /// What a sealed file is bound to: its place in the state directory.
    static func sealingContext(user: String, name: String) -> String { "users/\(user)/\(name)" }

    /// `bytes` sealed for `users/<user>/<name>`, or as they are when the store does not seal.
    func sealedIfSealing(_ bytes: [UInt8], user: String, name: String) -> [UInt8] {
        guard let sealer else { return bytes }
        return sealer.seal(bytes, context: Self.sealingContext(user: user, name: name))
    }

    /// The plain bytes of a file the store reads: a sealing store accepts only sealed files that
    /// open under its key for that place; a store that does not seal accepts only plain ones.
    func openIfSealing(_ bytes: [UInt8], user: String, name: String) -> Result<[UInt8], FormatError> {
        guard let sealer else {
            return Sealer.isSealed(bytes)
                ? .failure(FormatError("sealed, but this store does not seal")) : .success(bytes)
        }
        guard Sealer.isSealed(bytes) else { return .failure(FormatError("not sealed")) }
        guard let plain = sealer.open(bytes, context: Self.sealingContext(user: user, name: name)) else {
            return .failure(FormatError("sealed file does not open: damaged, or moved from another place"))
        }
        return .success(plain)
    }
}
