// SPDX-License-Identifier: Apache-2.0
import Glibc
import LocalAuthCore
import LocalAuthProtocol
import LocalAuthTesting
import Synchronization
import Testing

@testable import LocalAuthStore

/// A fresh directory under /tmp, removed (recursively) when the test's closure returns.
func withTemporaryDirectory<T>(_ body: (String) throws -> T) throws -> T {
    let path = try TemporaryDirectory.make("localauth-store-test")
    defer { TemporaryDirectory.remove(path) }
    return try body(path)
}

/// The permission bits of a path, as `stat` reports them.
func permissions(_ path: String) throws -> UInt32 {
    try #require(try Sys.lstatInfo(path)).permissions
}

func readBytes(_ path: String) throws -> [UInt8] {
    guard case .bytes(let bytes, _) = Sys.readFile(path, limit: 1 << 22) else {
        Issue.record("cannot read \(path)")
        return []
    }
    return bytes
}

/// Writes a file directly (bypassing the store), mode 0600 unless told otherwise.
func writeRaw(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode)
    try #require(fd >= 0)
    defer { close(fd) }
    try Sys.writeAll(fd, bytes, path: path)
    try #require(chmod(path, mode) == 0)
}

func names(in directory: String) throws -> [String] { try Sys.listDirectory(directory) }

/// Collects notices for assertions.
final class NoticeLog: Sendable {
    private let lines = Mutex<[String]>([])
    var all: [String] { lines.withLock { $0 } }
    var sink: @Sendable (String) -> Void { { line in self.lines.withLock { $0.append(line) } } }
}

/// A write hook that "crashes" (throws) at the `n`-th step it sees, counting from 1.
final class CrashAfter: Sendable {
    static let crash = StoreError.io("simulated crash", errno: 0)
    private let remaining: Atomic<Int>
    private let seen = Mutex<[WriteStep]>([])

    init(steps n: Int) { remaining = Atomic(n) }

    var steps: [WriteStep] { seen.withLock { $0 } }

    var hook: @Sendable (WriteStep) throws(StoreError) -> Void {
        { step throws(StoreError) in
            self.seen.withLock { $0.append(step) }
            if self.remaining.subtract(1, ordering: .relaxed).newValue == 0 { throw CrashAfter.crash }
        }
    }
}

/// The steps of a durable write in their order, each with whether a crash after it leaves the new
/// content (the rename is the point of no return).
let crashPoints: [(WriteStep, Bool)] = [
    (.tempWritten, false), (.tempSynced, false), (.renamed, true), (.directorySynced, true),
]

/// Runs `write` on a store over `directory` that crashes after `step`, expects the crash there,
/// and returns the store a restart opens.
func restartAfterCrash(
    in directory: String, after step: WriteStep, _ write: (EnrollmentStore) throws -> Void,
    sourceLocation: SourceLocation = #_sourceLocation
) throws -> EnrollmentStore {
    let crash = CrashAfter(steps: crashPoints.firstIndex { $0.0 == step }! + 1)
    let crashing = try EnrollmentStore(stateDirectory: directory, onNotice: nil, writeHook: crash.hook)
    #expect(throws: CrashAfter.crash, sourceLocation: sourceLocation) { try write(crashing) }
    #expect(crash.steps.last == step, sourceLocation: sourceLocation)
    return try EnrollmentStore(stateDirectory: directory)
}

/// Opening the store at `state` with `sealing` fails closed: a sealing error that says `reason`.
func expectOpenRefused(
    _ state: String, sealing: SealingConfiguration, saying reason: String,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(sourceLocation: sourceLocation) {
        try EnrollmentStore(stateDirectory: state, sealing: sealing)
    } throws: { error in
        guard case StoreError.sealing(let why) = error else { return false }
        return why.contains(reason)
    }
}

extension RecordLoad {
    /// A record of any kind read as damaged.
    var isCorrupt: Bool { if case .corrupt = self { true } else { false } }
}

let virtualDevice = "virtual_device-0"

/// A print as the virtual device makes them: 61 opaque bytes.
func samplePrint(_ finger: FingerName = "right-index-finger", device: String = virtualDevice, seed: UInt8 = 1)
    -> StoredPrint
{
    StoredPrint(
        finger: finger, deviceKey: device, data: (0..<61).map { UInt8(truncatingIfNeeded: Int($0) &* 7 &+ Int(seed)) },
        enrolledAtMs: 1_760_000_000_000 + Int64(seed))
}

let sampleHash = "$y$j9T$abcdefghijklmnopqrstu.$ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijk/0"

let isRoot = geteuid() == 0

/// Finger names written as fprintd spells them, for readable tests; an unknown name is a test bug.
extension FingerName: ExpressibleByStringLiteral {
    public init(stringLiteral name: String) { self = FingerName(rawValue: name)! }
}
