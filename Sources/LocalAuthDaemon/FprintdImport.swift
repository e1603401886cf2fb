// SPDX-License-Identifier: Apache-2.0
import FingerprintReader
import LocalAuthProtocol
import LocalAuthStore

#if canImport(Glibc)
    import Glibc
#endif

/// Importing the prints fprintd stored (`<root>/<user>/<driver>/<device id>/<finger>`, libfprint's own
/// serialisation, the format our store keeps), at first start and on `localauthctl import-fprintd`.
///
/// Each print is checked before it is taken: a regular file (never a link) owned by root and of a
/// print's size, that libfprint deserialises, whose own driver, device id, finger and user are the
/// ones its path names. A print that fails a check is reported (the RESULT's count, one journal line
/// each) and skipped; one that passes is added in a single atomic store write, so none is ever half
/// imported; a finger the account already has on that reader is left as it is. fprintd's tree is
/// only read, never changed.
struct FprintdImport {
    let parts: DaemonParts

    /// Where fprintd keeps its prints (its `StateDirectory=fprint`).
    static let defaultRoot = "/var/lib/fprint"
    /// The largest print file taken: image readers' prints are a few kB, match-on-chip ones bytes.
    static let maxPrintBytes = 1 << 20
    /// Written in the state directory once the first start's import ran.
    static let doneMarker = "fprintd-import.done"

    struct Outcome {
        var imported: [(user: String, finger: String)] = []
        var skipped: [(path: String, why: String)] = []
    }

    /// Imports every print under `root`; `serialize` runs each account's part in that account's turn.
    nonisolated(nonsending) func run(
        from root: String, caller: PeerCredentials,
        serialize: (String, () async -> Void) async -> Void
    ) async -> Answer {
        guard let reader = parts.reader else {
            return Answer(.biometryNotAvailable, Phrase.said("libfprint is not running; nothing can be checked"))
        }
        if let problem = Self.trustedDirectory(root) {
            // The problem is the journal's English words for a directory's owner and mode.
            return Answer(
                .invalidRequest,
                Phrase.said("fprintd's prints at %1$s are not imported: %2$s", .verbatim(root), .verbatim(problem)))
        }
        var outcome = Outcome()
        for user in Self.entries(root) {
            let userDir = root + "/" + user
            guard EnrollmentStore.isValidUserName(user), Self.isDirectory(userDir) else {
                outcome.skipped.append((userDir, "not a user's folder"))
                continue
            }
            var found: [(path: String, key: String, finger: FingerName, data: [UInt8])] = []
            for driver in Self.entries(userDir) {
                for device in Self.entries(userDir + "/" + driver) {
                    for file in Self.entries(userDir + "/" + driver + "/" + device) {
                        let path = [userDir, driver, device, file].joined(separator: "/")
                        switch await check(path, user: user, driver: driver, device: device, file: file, reader: reader)
                        {
                        case .failure(let why): outcome.skipped.append((path, why.reason))
                        case .success(let print): found.append((path, print.key, print.finger, print.data))
                        }
                    }
                }
            }
            guard !found.isEmpty else { continue }
            await serialize(user) {
                for print in found {
                    let held = (try? parts.store.prints(user: user, deviceKey: print.key)) ?? []
                    if held.contains(where: { $0.finger == print.finger }) {
                        outcome.skipped.append((print.path, "\(user) has \(print.finger.rawValue) enrolled already"))
                        continue
                    }
                    do {
                        _ = try parts.store.addPrint(
                            StoredPrint(
                                finger: print.finger, deviceKey: print.key, data: print.data,
                                enrolledAtMs: parts.clock()),
                            user: user)
                        outcome.imported.append((user, print.finger.rawValue))
                        parts.audit.decision(
                            .importFprintd, user: user, caller: caller, result: .success,
                            detail: "imported \(print.finger.rawValue) from fprintd", fields: [("source", print.path)])
                    } catch {
                        outcome.skipped.append((print.path, "the store refused it: \(error)"))
                    }
                }
            }
        }
        for (path, why) in outcome.skipped { parts.audit.notice("fprintd import: skipped \(path): \(why)") }
        return Self.summary(outcome, root: root)
    }

    struct Refusal: Error {
        let reason: String
    }

    struct Checked {
        let key: String
        let finger: FingerName
        let data: [UInt8]
    }

    /// One print file, checked as the type's comment says.
    private nonisolated(nonsending) func check(
        _ path: String, user: String, driver: String, device: String, file: String, reader: FingerprintReader
    ) async -> Result<Checked, Refusal> {
        guard let number = Int(file), (1...10).contains(number), String(number) == file else {
            return .failure(Refusal(reason: "not a finger's file (1 … 10)"))
        }
        let finger = FingerName.allCases[number - 1]
        let data: [UInt8]
        switch Self.readPrint(path) {
        case .failure(let refusal): return .failure(refusal)
        case .success(let bytes): data = bytes
        }
        let facts: PrintFacts
        do {
            facts = try await reader.describePrint(data)
        } catch {
            return .failure(Refusal(reason: "libfprint cannot read it as a print (\(ReaderFailure(error).english))"))
        }
        guard facts.driver == driver, facts.deviceID == device else {
            return .failure(
                Refusal(reason: "it was made on \(facts.driver)/\(facts.deviceID), not the reader its path names"))
        }
        guard facts.finger == number else {
            return .failure(Refusal(reason: "it holds finger \(facts.finger), not \(finger.rawValue)"))
        }
        if let owner = facts.username, !owner.isEmpty, owner != user {
            return .failure(Refusal(reason: "it belongs to \(owner), not \(user)"))
        }
        return .success(Checked(key: facts.storageKey, finger: finger, data: data))
    }

    /// The RESULT: counts, and the imported fingers while they fit; every skip is in the journal.
    static func summary(_ outcome: Outcome, root: String) -> Answer {
        var line = Phrase.said(
            "Imported %1$s print(s) from %2$s", .verbatim(String(outcome.imported.count)), .verbatim(root))
        let names = outcome.imported.map { "\($0.user) \($0.finger)" }.joined(separator: ", ")
        if !names.isEmpty && names.utf8.count <= 600 { line = Phrase.said("%1$s (%2$s)", line, .verbatim(names)) }
        if !outcome.skipped.isEmpty {
            line = Phrase.said(
                "%1$s; skipped %2$s (each reason is in the journal)", line,
                .verbatim(String(outcome.skipped.count)))
        }
        return Answer(.success, line)
    }

    // MARK: Reading fprintd's tree, never following a link

    /// Nil when `path` is a real directory owned by root that no one else may write; else why not.
    static func trustedDirectory(_ path: String) -> String? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return String(cString: strerror(errno)) }
        guard st.st_mode & S_IFMT == S_IFDIR else { return "not a directory (a link is not followed)" }
        guard st.st_uid == 0 else { return "owned by uid \(st.st_uid), not root" }
        guard st.st_mode & (S_IWGRP | S_IWOTH) == 0 else { return "others may write it" }
        return nil
    }

    static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFDIR
    }

    /// The names in a directory (not `.` and `..`), sorted; none when it cannot be read or is a link.
    static func entries(_ path: String) -> [String] {
        guard isDirectory(path), let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// A print file's bytes: a regular file owned by root, opened without following links, of a
    /// print's size.
    static func readPrint(_ path: String) -> Result<[UInt8], Refusal> {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return .failure(Refusal(reason: "cannot open it: \(String(cString: strerror(errno)))")) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            return .failure(Refusal(reason: "not a regular file"))
        }
        guard st.st_uid == 0 else { return .failure(Refusal(reason: "owned by uid \(st.st_uid), not root")) }
        guard st.st_size >= 4, st.st_size <= maxPrintBytes else {
            return .failure(Refusal(reason: "\(st.st_size) bytes is not a print's size"))
        }
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return .failure(Refusal(reason: "it could not be read whole")) }
            done += n
        }
        return .success(bytes)
    }
}

extension Daemon {
    /// The system instance takes the machine's fprintd prints at its first start; a daemon on a
    /// state directory of its own (a test's, a second instance) only when its configuration names
    /// `fprintd-state-dir`, so that it never reads the machine's prints by default.
    public static func importsFprintdPrintsAtFirstStart(_ options: DaemonOptions, _ config: DaemonConfiguration)
        -> Bool
    {
        options.stateDirectory == DaemonOptions.systemStateDirectory || config.fprintdStateDirGiven
    }

    /// At first start, the prints fprintd left in `from` (when it exists) come along, once: a marker
    /// in the state directory says it was done, so a finger deleted later never comes back.
    public func importFprintdPrintsAtFirstStart(from root: String, stateDirectory: String) async {
        let audit = parts.audit
        let marker = stateDirectory + "/" + FprintdImport.doneMarker
        var st = stat()
        guard lstat(marker, &st) != 0, lstat(root, &st) == 0 else { return }
        let me = PeerCredentials(pid: getpid(), uid: 0, gid: 0, userName: "root")
        let result = await handle(.importFprintd(from: root), caller: me, io: .silent)
        audit.info("first start: \(result.english)")
        let fd = open(marker, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if fd >= 0 {
            fsync(fd)
            close(fd)
        } else {
            audit.notice(
                "cannot write \(marker) (\(String(cString: strerror(errno)))); the import runs again next start")
        }
    }
}
