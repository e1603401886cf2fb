// SPDX-License-Identifier: Apache-2.0
import DescriptorPassing
import Foundation
import LocalAuthClient
import LocalAuthProtocol
import LocalAuthTesting
import Testing

/// The real `localauthd` logging to "the journal": `JOURNAL_STREAM` names its stderr, and in a
/// private mount namespace `/run/systemd/journal` is a directory of the test's, whose `socket` is a
/// datagram socket the test reads. Records are journald's native protocol, read back field by field.
@Suite(.onOwnThreads, .timeLimit(.minutes(2)))
struct JournalTests {
    /// The documented `MESSAGE_ID` of each kind of audit record (`AuditLog.messageIDs`).
    static let evaluateID = "507d44f6ba20425fb2e87165eff5ff51"
    static let enrollID = "e8c3f3b63f7545b2b6a4c55fd2409691"
    static let passcodeSetID = "3933d89789564958841e6d1046a7a989"

    static func biometrics(tries: Int64 = 1) -> EvaluateOptions {
        EvaluateOptions(
            policy: .deviceOwnerAuthenticationWithBiometrics, user: "alice", service: "journal-test", tries: tries,
            timeoutMs: 10_000)
    }

    static let owner = EvaluateOptions(
        policy: .deviceOwnerAuthentication, user: "alice", service: "journal-test", flags: [.passcodeCapable],
        tries: 1, timeoutMs: 10_000)

    /// Answers the passcode questions with `answers` in turn, and gives up (CANCEL) when they run out.
    static func typing(_ answers: String...) -> (Event) -> EventReply? {
        var asked = 0
        return { event in
            guard event.kind == .passcodeNeeded else { return nil }
            asked += 1
            return asked <= answers.count ? .passcode(answers[asked - 1]) : .cancel
        }
    }

    /// The journal fields of alice's evaluation by this process for the service "journal-test".
    static func expectEvaluationRecord(
        _ record: JournalRecord, priority: String, result: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let expected = [
            "MESSAGE_ID": evaluateID, "PRIORITY": priority, "LOCALAUTH_USER": "alice",
            "LOCALAUTH_SERVICE": "journal-test", "LOCALAUTH_RESULT": result, "LOCALAUTH_CALLER_UID": "\(getuid())",
        ]
        for (field, value) in expected {
            #expect(record[field] == value, "\(field): \(record)", sourceLocation: sourceLocation)
        }
    }

    @Test func journal_whenEvaluating_recordsAuditFieldsWithFixedMessageID() async throws {
        let journal = try JournalSocket()
        let d = try JournaledDaemon.start(journal: journal)
        try await d.enroll(user: "alice", printID: "alice-1")

        try d.simulate("touch", "alice-1")
        let (matched, _) = try d.perform(.evaluate(Self.biometrics()))
        #expect(matched.isSuccess, "\(matched.message)")
        let success = try journal.next("the record of the matching evaluation", log: d) {
            $0["LOCALAUTH_OPERATION"] == "evaluate"
        }
        Self.expectEvaluationRecord(success, priority: "6", result: "success")
        #expect(success["LOCALAUTH_POLICY"] == "1", "\(success)")
        #expect(success["LOCALAUTH_CALLER_PID"] == "\(getpid())", "\(success)")
        #expect(success["SYSLOG_IDENTIFIER"] == "localauthd", "\(success)")
        let message = try #require(success["MESSAGE"], "\(success)")
        #expect(message.hasPrefix("audit op=evaluate user=\"alice\" caller_uid=\(getuid())"), "\(message)")
        #expect(message.contains("service=\"journal-test\""), "\(message)")
        #expect(message.contains("result=success"), "\(message)")

        // A miss: the same fixed id, its own result, at notice.
        try d.simulate("touch", "mallory")
        let (missed, _) = try d.perform(.evaluate(Self.biometrics()))
        #expect(missed.resultCode == .authenticationFailed, "\(missed.message)")
        let failure = try journal.next("the record of the missed evaluation", log: d) {
            $0["LOCALAUTH_OPERATION"] == "evaluate"
        }
        Self.expectEvaluationRecord(failure, priority: "5", result: "authenticationFailed")
        #expect(failure["MESSAGE"]?.contains("result=authenticationFailed") == true, "\(failure)")
    }

    /// An audit record names the calling program as the daemon read it at accept (its executable),
    /// never the service the client sent (before: the pid alone); and a client's text with C1
    /// controls (U+009B CSI, U+009D OSC, U+0085 NEL) is escaped in the line as C0 is, so it cannot
    /// drive the terminal of whoever reads the log (before: written raw).
    @Test func audit_namesTheCallersProgram_andEscapesC1ControlsInTheClientsText() async throws {
        let journal = try JournalSocket()
        let d = try JournaledDaemon.start(journal: journal)
        let service = "sudo\u{9B}2J\u{9D}0;PWN\u{7}\u{85}x"
        let (result, _) = try d.perform(
            .evaluate(
                EvaluateOptions(
                    policy: .deviceOwnerAuthenticationWithBiometrics, user: "alice", service: service, tries: 1,
                    timeoutMs: 10_000)))
        #expect(!result.isSuccess, "\(result.message)")
        let record = try journal.next("the record of the evaluation", log: d) {
            $0["LOCALAUTH_OPERATION"] == "evaluate"
        }
        let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        #expect(record["LOCALAUTH_CALLER_PROGRAM"] == exe, "\(record)")
        let message = try #require(record["MESSAGE"], "\(record)")
        #expect(message.contains("caller_pid=\(getpid()) caller_program=\"\(exe)\" "), "\(message)")
        #expect(message.contains("service=\"sudo\\x9b2J\\x9d0;PWN\\x07\\x85x\""), "\(message)")
        #expect(!message.unicodeScalars.contains { (0x80...0x9F).contains($0.value) }, "\(message)")
    }

    @Test func journal_whenEnrolling_recordsAuditFieldsWithFixedMessageID() async throws {
        let journal = try JournalSocket()
        let d = try JournaledDaemon.start(journal: journal)
        try await d.enroll(user: "alice", printID: "alice-1")
        let record = try journal.next("the record of the enrolment", log: d) { $0["LOCALAUTH_OPERATION"] == "enroll" }
        #expect(record["MESSAGE_ID"] == Self.enrollID, "\(record)")
        #expect(record["PRIORITY"] == "6", "\(record)")
        #expect(record["LOCALAUTH_USER"] == "alice", "\(record)")
        #expect(record["LOCALAUTH_RESULT"] == "success", "\(record)")
        #expect(record["LOCALAUTH_CALLER_UID"] == "\(getuid())", "\(record)")
        #expect(record["LOCALAUTH_CALLER_PID"] == "\(getpid())", "\(record)")
        #expect(record["SYSLOG_IDENTIFIER"] == "localauthd", "\(record)")
        let message = try #require(record["MESSAGE"], "\(record)")
        #expect(message.hasPrefix("audit op=enroll user=\"alice\" caller_uid=\(getuid())"), "\(message)")
        #expect(message.contains("result=success"), "\(message)")
    }

    @Test func journal_neverRecordsThePasscode() async throws {
        let journal = try JournalSocket()
        let d = try JournaledDaemon.start(journal: journal)
        let passcode = "journal-secret-\(UInt32.random(in: 0...UInt32.max))"
        let wrong = "journal-wrong-\(UInt32.random(in: 0...UInt32.max))"

        let (set, _) = try d.perform(.passcodeSet(user: "alice", passcode: passcode, oldPasscode: nil))
        #expect(set.isSuccess, "\(set.message)")
        let setRecord = try journal.next("the record of setting the passcode", log: d) {
            $0["LOCALAUTH_OPERATION"] == "passcodeSet"
        }
        #expect(setRecord["MESSAGE_ID"] == Self.passcodeSetID, "\(setRecord)")
        #expect(setRecord["LOCALAUTH_RESULT"] == "success", "\(setRecord)")

        // A wrong passcode, then the right one, each typed when the owner policy asks for it.
        let (unlocked, events) = try d.perform(.evaluate(Self.owner), onEvent: Self.typing(wrong, passcode))
        #expect(unlocked.isSuccess, "\(unlocked.message)")
        #expect(events.filter { $0.kind == .passcodeNeeded }.count == 2, "\(events)")
        let evaluation = try journal.next("the record of the evaluation", log: d) {
            $0["LOCALAUTH_OPERATION"] == "evaluate"
        }
        #expect(evaluation["MESSAGE_ID"] == Self.evaluateID, "\(evaluation)")
        #expect(evaluation["LOCALAUTH_RESULT"] == "success", "\(evaluation)")
        #expect(evaluation["LOCALAUTH_POLICY"] == "2", "\(evaluation)")

        // Every record the daemon ever sends: the last one says it is stopping.
        #expect(d.stop() == 0)
        _ = try journal.next("the record of stopping", log: d) {
            $0["MESSAGE"]?.hasPrefix("stopping on signal") == true
        }
        try journal.drain()
        if ProcessInfo.processInfo.environment["JOURNAL_TESTS_DUMP"] != nil { print(journal.records) }
        for record in journal.records {
            #expect(!record.raw.contains(Array(passcode.utf8)), "the passcode is in \(record)")
            #expect(!record.raw.contains(Array(wrong.utf8)), "the wrong passcode is in \(record)")
        }
        let stderr = Array(d.daemonLog.utf8)
        #expect(!stderr.contains(Array(passcode.utf8)) && !stderr.contains(Array(wrong.utf8)), "\(d.daemonLog)")
    }
}

/// One record read from the journal socket: its datagram and its fields.
struct JournalRecord: CustomStringConvertible {
    let raw: [UInt8]
    let fields: [(String, [UInt8])]

    /// The last value of `key`, as text.
    subscript(key: String) -> String? {
        fields.last { $0.0 == key }.map { String(decoding: $0.1, as: UTF8.self) }
    }

    var description: String {
        "{" + fields.map { "\($0.0)=\(String(decoding: $0.1, as: UTF8.self).debugDescription)" }.joined(separator: ", ")
            + "}"
    }

    /// journald's native protocol: `KEY=value\n`, or `KEY\n` + 64-bit little-endian length + bytes + `\n`.
    init(datagram d: [UInt8]) throws {
        raw = d
        var fields: [(String, [UInt8])] = []
        var i = 0
        while i < d.count {
            guard let newline = d[i...].firstIndex(of: UInt8(ascii: "\n")) else {
                throw JournalError.malformed("a field without its newline at byte \(i)", d)
            }
            let line = d[i..<newline]
            if let equals = line.firstIndex(of: UInt8(ascii: "=")) {
                fields.append((String(decoding: line[..<equals], as: UTF8.self), Array(line[(equals + 1)...])))
                i = newline + 1
                continue
            }
            let start = newline + 1 + 8
            guard start <= d.count else { throw JournalError.malformed("a binary field without its length", d) }
            var length = 0
            for k in 0..<8 { length |= Int(d[newline + 1 + k]) << (8 * k) }
            guard length >= 0, start + length < d.count, d[start + length] == UInt8(ascii: "\n") else {
                throw JournalError.malformed("a binary field of \(length) bytes that does not fit", d)
            }
            fields.append((String(decoding: line, as: UTF8.self), Array(d[start..<(start + length)])))
            i = start + length + 1
        }
        self.fields = fields
    }
}

enum JournalError: Error, CustomStringConvertible {
    case setup(String)
    case malformed(String, [UInt8])
    case unsupported(String)
    case timeout(String, [JournalRecord], String)

    var description: String {
        switch self {
        case .setup(let why): "journal socket: \(why)"
        case .malformed(let why, let bytes): "malformed journal datagram: \(why): \(bytes)"
        case .unsupported(let why): "journal datagram not handled: \(why)"
        case .timeout(let what, let records, let log):
            "\(what) did not arrive within the deadline; records so far: \(records)\ndaemon stderr:\n\(log)"
        }
    }
}

/// A `SOCK_DGRAM` Unix socket named `socket` in a directory of its own, standing in for
/// `/run/systemd/journal`; it keeps every record in order of arrival.
final class JournalSocket: @unchecked Sendable {
    let directory: String
    let journalDirectory: String
    private let fd: Int32
    private(set) var records: [JournalRecord] = []
    /// Records before this index have been returned by `next`.
    private var cursor = 0

    init() throws {
        directory = try TemporaryDirectory.make("la-journal")
        journalDirectory = directory + "/journal"
        guard mkdir(journalDirectory, 0o755) == 0 else { throw JournalError.setup("mkdir failed: \(errno)") }
        guard
            let fd = UnixSocket.bind(
                journalDirectory + "/socket", type: Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
        else { throw JournalError.setup("bind failed: \(errno)") }
        self.fd = fd
    }

    deinit {
        close(fd)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Reads one datagram if one arrives within `timeoutMs`; false when none did.
    private func receive(timeoutMs: Int32) throws -> Bool {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, timeoutMs) > 0 else { return false }
        var buffer = [UInt8](repeating: 0, count: 1 << 18)
        var control = [UInt8](repeating: 0, count: 512)
        let (count, controlLength, flags) = buffer.withUnsafeMutableBytes { bytes in
            control.withUnsafeMutableBytes { controlBytes in
                DescriptorPassing.withMessage(data: bytes, control: controlBytes) { message in
                    let n = recvmsg(fd, &message, Int32(MSG_CMSG_CLOEXEC))
                    return (n, message.msg_controllen, message.msg_flags)
                }
            }
        }
        guard count >= 0 else { throw JournalError.setup("recvmsg failed: \(errno)") }
        guard controlLength == 0 else {
            throw JournalError.unsupported(
                "a record came with ancillary data (a memfd passed with SCM_RIGHTS, for a record too large for a datagram)"
            )
        }
        guard flags & Int32(MSG_TRUNC) == 0 else { throw JournalError.unsupported("a datagram was truncated") }
        records.append(try JournalRecord(datagram: Array(buffer[0..<count])))
        return true
    }

    /// The first record after the last one returned that satisfies `match`, awaited up to `timeout` seconds.
    func next(
        _ what: String, timeout: TimeInterval = 15, log daemon: DaemonHarness? = nil,
        where match: (JournalRecord) -> Bool
    ) throws -> JournalRecord {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let index = records[cursor...].firstIndex(where: match) {
                cursor = index + 1
                return records[index]
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw JournalError.timeout(what, records, daemon?.daemonLog ?? "") }
            _ = try receive(timeoutMs: Int32(left * 1000) + 1)
        }
    }

    /// Reads whatever is already queued.
    func drain() throws {
        while try receive(timeoutMs: 0) {}
    }
}

/// `localauthd --virtual-reader` started by `DaemonHarness`, with `JOURNAL_STREAM` naming its
/// stderr file and, in a private mount namespace, `journal`'s directory bind-mounted over
/// `/run/systemd/journal`.
enum JournaledDaemon {
    /// Run by `sh` inside the namespace: `$1` is the directory to mount, the rest the daemon's command line.
    /// Where this machine has no `/run/systemd/journal`, a tmpfs over `/run/systemd` (or `/run`) provides one.
    static let script = """
        set -e
        journal=$1
        shift
        if [ ! -d /run/systemd/journal ]; then
            if [ -d /run/systemd ]; then mount -t tmpfs tmpfs /run/systemd; else mount -t tmpfs tmpfs /run; fi
            mkdir -p /run/systemd/journal
        fi
        mount --bind "$journal" /run/systemd/journal
        exec "$@"
        """

    static func start(journal: JournalSocket) throws -> DaemonHarness {
        let directory = try TemporaryDirectory.make("la")
        chmod(directory, 0o755)
        let stderrPath = directory + "/daemon.log"  // the harness's log file, made first to know its inode
        let fd = open(stderrPath, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        var st = stat()
        guard fd >= 0, fstat(fd, &st) == 0 else { throw HarnessError.setup("cannot make \(stderrPath): \(errno)") }
        close(fd)
        return try DaemonHarness(
            environment: ["JOURNAL_STREAM": "\(st.st_dev):\(st.st_ino)"],
            launcher: [
                "/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script, "sh",
                journal.journalDirectory,
            ],
            directory: directory)
    }
}

extension Array where Element == UInt8 {
    /// Whether `needle` occurs in these bytes.
    func contains(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return needle.isEmpty }
        return (0...(count - needle.count)).contains { self[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}
