// SPDX-License-Identifier: Apache-2.0
// The fprintd door's rules in process: a real `FprintdDevice` on an in-memory bus endpoint (calls
// as `BusCall`s that crossed no bus, signals recorded), in front of the real `Daemon` over
// libfprint's virtual_device. polkit cannot run here: its answer is "allowed" (Tests/fprintd asks
// the real polkitd on a real bus). The caller is `nobody` (uid 65534), whose account the door looks
// up with getpwuid as it does for every caller. Each test is a child process of its own (one
// libfprint context per process); `make test` runs them with the other exit tests.

import Foundation
import Glibc
import LocalAuthProtocol
import LocalAuthSystemd
import Synchronization
import Testing

@testable import LocalAuthDaemon
@testable import LocalAuthDoorLimits
@testable import LocalAuthFprintdDoor

/// The device's bus connection, in memory: its queue, and the signals it sent (with their destination).
final class MemoryBus: FprintdBus, @unchecked Sendable {
    let queue = DispatchQueue(label: "memory-bus")
    let sent = Mutex<[(member: String, values: [BusValue], destination: String?)]>([])

    func emitSignal(path: String, interface: String, member: String, _ values: [BusValue], destination: String?) {
        sent.withLock { $0.append((member, values, destination)) }
    }

    func emitPropertiesChanged(path: String, interface: String, names: [String]) {}

    /// The signals named `member` sent so far, with their destination.
    func signals(_ member: String) -> [([BusValue], String?)] {
        sent.withLock { $0.filter { $0.member == member }.map { ($0.values, $0.destination) } }
    }
}

/// polkit's answer where polkitd cannot run: every action allowed.
struct AllowingPolkit: PolkitAuthority {
    func check(sender: String, action: String, completion: @escaping (Result<PolkitAnswer, BusError>) -> Void) {
        completion(.success(PolkitAnswer(isAuthorized: true, isChallenge: false, details: [:])))
    }
}

/// One device of the door in front of an in-process daemon, and its callers.
struct InProcessDoor {
    static let user = "nobody"
    static let uid: UInt32 = 65534
    let daemon: InProcessDaemon
    let bus: MemoryBus
    let device: FprintdDevice

    static func start() async throws -> InProcessDoor {
        let d = try await InProcessDaemon.start()
        try await d.simulate("touch", "nobody-finger")  // opens the reader; an enrolment takes it as a stage
        let info = try #require(await d.daemon.parts.reader?.devices().first)
        let bus = MemoryBus()
        let audit = AuditLog(level: .info, sink: .stderr)
        let gate = FprintdGate(
            requests: RequestGate(limit: 4), throttle: NoticeThrottle(), callsPerUID: 8, audit: audit, queue: bus.queue)
        let device = FprintdDevice(
            index: 0, reader: info, bus: bus, polkit: AllowingPolkit(), backend: d.daemon, audit: audit, gate: gate)
        return InProcessDoor(daemon: d, bus: bus, device: device)
    }

    init(daemon: InProcessDaemon, bus: MemoryBus, device: FprintdDevice) {
        self.daemon = daemon
        self.device = device
        self.bus = bus
    }

    /// `member(arguments)` from `sender` (uid `nobody` unless the bus states another uid), to its answer.
    func call(_ member: String, _ arguments: [BusValue] = [], from sender: String, uid: UInt32 = Self.uid) async
        -> Result<[BusValue], BusError>
    {
        let device = self.device
        return await withCheckedContinuation { continuation in
            bus.queue.async {
                let call = BusCall(
                    member: member, sender: sender, arguments: arguments, credentials: (uid, getpid())
                ) { continuation.resume(returning: $0) }
                device.receive(call)
            }
        }
    }

    /// The error's name, or "ok".
    func outcome(_ member: String, _ arguments: [BusValue] = [], from sender: String, uid: UInt32 = Self.uid) async
        -> String
    {
        switch await call(member, arguments, from: sender, uid: uid) {
        case .success: "ok"
        case .failure(let error): error.name
        }
    }

    /// Root enrols nobody's right index finger on the virtual reader.
    func enrollNobody() async throws {
        let devices = await daemon.request(.devices, as: InProcessDaemon.root)
        let stages = try DeviceInfo(field: try #require(devices.fields.allBytes(.device).first)).enrollStages
        // The touch that opened the reader counts as the first stage.
        for _ in 1..<stages { try await daemon.simulate("touch", "nobody-finger") }
        let result = await daemon.request(.enroll(user: Self.user, finger: .rightIndex), as: InProcessDaemon.root)
        try #require(result.isSuccess, "enrol: \(result.message)")
    }

    /// Waits until `member` has been signalled `count` times (at most ~30 s: a hang's bound only).
    func waitFor(_ member: String, count: Int = 1) async {
        for _ in 0..<3000 where bus.signals(member).count < count {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }
}

@Suite(.serialized, .timeLimit(.minutes(1)))
struct FprintdDoorTests {
    @Test func claim_isOneClaimerAtATime_andAVanishedClaimerFreesTheDevice() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let door = try await InProcessDoor.start()
            let first = await door.outcome("Claim", [.string("")], from: ":1.1")
            check(first == "ok", "the first Claim is taken: \(first)")
            let second = await door.outcome("Claim", [.string("")], from: ":1.2")
            check(second == Fprintd.ErrorName.alreadyInUse.rawValue, "a second claimer is refused: \(second)")
            door.bus.queue.sync { door.device.clientVanished(":1.1") }
            let after = await door.outcome("Claim", [.string("")], from: ":1.2")
            check(after == "ok", "the claim of a claimer that left the bus ends at once: \(after)")
            let release = await door.outcome("Release", from: ":1.2")
            check(release == "ok", "Release: \(release)")
            door.daemon.finish()
        }
        reportChildErrors(result)
        // Each claim and its end is the daemon's request, with its audit record.
        let log = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        let records = log.split(separator: "\n").filter { $0.contains("audit op=claimReader user=\"nobody\"") }
        #expect(records.count == 2 && records.allSatisfy { $0.contains("result=success") }, "\(log)")
        #expect(log.contains("message=\"Claim ended; the reader is not closed at once\""), "\(log)")
        #expect(log.contains("audit op=releaseReader user=\"nobody\""), "\(log)")
    }

    @Test func verifyStop_duringAScan_endsTheVerificationAndTellsTheClaimerOnly() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let door = try await InProcessDoor.start()
            try await door.enrollNobody()
            check(await door.outcome("Claim", [.string("")], from: ":1.1") == "ok", "Claim")
            // VerifyStart is answered once the one evaluation scans, which names the finger.
            let started = await door.outcome("VerifyStart", [.string("any")], from: ":1.1")
            check(started == "ok", "VerifyStart: \(started)")
            await door.waitFor("VerifyFingerSelected")  // sent just after the answer
            let selected = door.bus.signals("VerifyFingerSelected")
            check(
                selected.count == 1 && selected[0].0 == [.string("right-index-finger")] && selected[0].1 == ":1.1",
                "the scanned finger, to the claimer: \(selected)")
            let stopped = await door.outcome("VerifyStop", from: ":1.1")
            check(stopped == "ok", "VerifyStop during the scan: \(stopped)")
            await door.waitFor("VerifyStatus")
            let statuses = door.bus.signals("VerifyStatus")
            check(
                statuses.count == 1 && statuses[0].0 == [.string("verify-no-match"), .bool(true)]
                    && statuses[0].1 == ":1.1",
                "one final status, to the claimer: \(statuses)")
            let again = await door.outcome("VerifyStart", [.string("any")], from: ":1.1")
            check(again == "ok", "a new VerifyStart after the Stop: \(again)")
            check(await door.outcome("VerifyStop", from: ":1.1") == "ok", "the second VerifyStop")
            check(await door.outcome("Release", from: ":1.1") == "ok", "Release")
            door.daemon.finish()
        }
        reportChildErrors(result)
    }

    /// The door keeps what the bus daemon said of a sender until its name leaves the bus (unique
    /// names are never reused while the bus runs). Each connection here is a uid the bus daemon
    /// states: one without an account (the door refuses it), or `nobody`.
    @Test func senderCredentials_areKeptPerName_andNeverServeAnotherConnection() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let door = try await InProcessDoor.start()
            let stranger: UInt32 = 3_999_999  // no account
            let refused = await door.outcome("Claim", [.string("")], from: ":1.7", uid: stranger)
            check(refused == Fprintd.ErrorName.internal.rawValue, "a uid without an account is refused: \(refused)")
            // Another connection is asked about afresh: the stranger's facts do not serve it.
            check(await door.outcome("Claim", [.string("")], from: ":1.8") == "ok", "another name's Claim")
            check(await door.outcome("Release", from: ":1.8") == "ok", "Release")
            // What the bus said of :1.7 stays while :1.7 is on the bus (its connection cannot change).
            let again = await door.outcome("Claim", [.string("")], from: ":1.7")
            check(
                again == Fprintd.ErrorName.internal.rawValue, "the same connection, as the bus first stated: \(again)")
            // A name that left the bus is forgotten: a connection that had that name (a test's
            // in-memory bus can reuse it; a real bus daemon never does) is asked about afresh.
            door.bus.queue.sync { door.device.clientVanished(":1.7") }
            let fresh = await door.outcome("Claim", [.string("")], from: ":1.7")
            check(fresh == "ok", "a new connection under a vanished name is looked up afresh: \(fresh)")
            check(await door.outcome("Release", from: ":1.7") == "ok", "Release")
            door.daemon.finish()
        }
        reportChildErrors(result)
    }
}
