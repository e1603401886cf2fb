// SPDX-License-Identifier: Apache-2.0
import Dispatch
import LocalAuthDaemon
import LocalAuthProtocol
import LocalAuthSystemd
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What the door asks of the daemon: the socket's own entry point, so every D-Bus request meets the
/// same authorisation, store, reader queue, lockouts and audit as a request on the socket.
protocol FprintdBackend: Sendable {
    func handle(_ request: Request, caller: PeerCredentials, io: RequestIO, door: DoorContext) async
        -> Answer
    func claimReader(user: String, caller: PeerCredentials, door: DoorContext, hold: Bool) async -> Answer
    func releaseReader(user: String, caller: PeerCredentials, door: DoorContext, close: Bool) async -> Answer
    func abandonReader(user: String, caller: PeerCredentials, door: DoorContext)
    func refusal(_ operation: Operation, caller: PeerCredentials, target: String, door: DoorContext) -> Answer?
    func lookUpPresence(caller: PeerCredentials, user: String, service: String?) -> PresenceLookup
}

extension Daemon: FprintdBackend {}

/// What a device needs of its bus connection: the queue it lives on and the signals it sends.
/// `BusConnection` on the system bus; an in-memory endpoint in the door's in-process tests.
protocol FprintdBus: AnyObject, Sendable {
    var queue: DispatchQueue { get }
    func emitSignal(path: String, interface: String, member: String, _ values: [BusValue], destination: String?)
    func emitPropertiesChanged(path: String, interface: String, names: [String])
}

extension BusConnection: FprintdBus {}

/// One reader as fprintd's `net.reactivated.Fprint.Device`: claim, verify, enrol, list and delete,
/// with fprintd's state machine (`src/device.c`: one claimer, one action at a time, an action stays
/// until its Stop) and its error names. Lives on the bus queue; daemon work runs in tasks whose
/// results come back to the queue.
final class FprintdDevice: @unchecked Sendable {
    enum ActionKind: Equatable {
        case none, verify, enroll, delete, list
    }

    /// The claim: who holds the device and for which account.
    struct Session {
        let sender: String
        let user: String
        let caller: PeerCredentials
    }

    let index: Int
    let path: String
    let reader: ReaderDevice
    let bus: FprintdBus
    let polkit: PolkitAuthority
    let backend: FprintdBackend
    /// The daemon holds the reader open for this device's claim (fprintd opens it on Claim).
    var holding = false
    /// A Release is closing the reader.
    var closing = false
    let audit: AuditLog
    /// The socket's per-uid limits and notice throttle.
    let gate: FprintdGate
    var session: Session?
    var action: ActionKind = .none
    /// The daemon request of the current verify or enrol, and how to stop it.
    var running: Task<Void, Never>?
    var stopRunning: (() -> Void)?
    /// Set when the door itself stopped the running request (Stop, Release, the claimer left).
    final class StopFlag: @unchecked Sendable { var value = false }
    /// The VerifyStop / EnrollStop / Release waiting for the running request to end and, after a
    /// verification, for the reader to finish its scan.
    var stopCalls: [BusCall] = []
    /// The reader scans of a verification: after its status the reader may still be finishing the
    /// last one (until the finger lifts, at most `EvaluationRun.finishGraceMs`), and fprintd's
    /// VerifyStop waits for that.
    final class Scans: Sendable {
        private let tasks = Mutex<[Task<Void, Never>]>([])
        func add(_ task: Task<Void, Never>) { tasks.withLock { $0.append(task) } }
        func cancel() { for task in tasks.withLock({ $0 }) { task.cancel() } }
        func ended() async { for task in tasks.withLock({ $0 }) { await task.value } }
    }
    var scans: Scans?
    /// Verifications whose reader scans have not all ended.
    var scanning = 0
    var statusReported = false
    /// The VerifyStart not answered yet: its evaluation has started no scan so far.
    var verifyCall: BusCall?
    /// Where the claimer asks from, looked up while polkit answers its VerifyStart (`admitted`), for
    /// that call's evaluation.
    var earlyPresence: (call: BusCall, lookup: PresenceLookup)?
    /// Counts starts and stops: a start whose preparation (the daemon's list, canEvaluate, the
    /// replaced print) outlived a Stop or Release of the same action does not begin.
    var startGeneration = 0
    var fingerPresent = false
    var fingerNeeded = false
    var enrollStages: Int
    var isSwipe: Bool

    init(
        index: Int, reader: ReaderDevice, bus: FprintdBus, polkit: PolkitAuthority, backend: FprintdBackend,
        audit: AuditLog, gate: FprintdGate
    ) {
        self.index = index
        self.path = Fprintd.devicePath(index)
        self.reader = reader
        self.bus = bus
        self.polkit = polkit
        self.backend = backend
        self.audit = audit
        self.gate = gate
        self.enrollStages = Self.stages(reader.enrollStages, identify: reader.supportsIdentify)
        self.isSwipe = reader.isSwipe
    }

    var interface: BusInterface {
        BusInterface(
            name: Fprintd.deviceInterface,
            methods: Self.methods.map { .init(member: $0.member, signature: $0.signature, result: $0.result) },
            signals: [
                .init(member: "VerifyFingerSelected", signature: "s"),
                .init(member: "VerifyStatus", signature: "sb"),
                .init(member: "EnrollStatus", signature: "sb"),
            ],
            properties: [
                .init(member: "name", signature: "s"),
                .init(member: "num-enroll-stages", signature: "i"),
                .init(member: "scan-type", signature: "s"),
                .init(member: "finger-present", signature: "b"),
                .init(member: "finger-needed", signature: "b"),
            ],
            handle: { [unowned self] call in self.receive(call) },
            property: { [unowned self] name in self.property(name) })
    }

    /// fprintd's `num-enroll-stages`: the reader's stages, and one more for the duplicate check on a
    /// reader that can identify.
    static func stages(_ readerStages: Int, identify: Bool) -> Int { readerStages + (identify ? 1 : 0) }

    func property(_ name: String) -> BusValue? {
        switch name {
        case "name": .string(reader.name)
        case "num-enroll-stages": .int32(Int32(clamping: enrollStages))
        case "scan-type": .string(isSwipe ? "swipe" : "press")
        case "finger-present": .bool(fingerPresent)
        case "finger-needed": .bool(fingerNeeded)
        default: nil
        }
    }

    /// The reader reported a new finger status or stage count: updates the properties, tells listeners.
    func update(
        fingerPresent present: Bool? = nil, fingerNeeded needed: Bool? = nil, enrollStages stages: Int? = nil,
        isSwipe swipe: Bool? = nil
    ) {
        var changed: [String] = []
        if let swipe, swipe != isSwipe {
            isSwipe = swipe
            changed.append("scan-type")
        }
        if let present, present != fingerPresent {
            fingerPresent = present
            changed.append("finger-present")
        }
        if let needed, needed != fingerNeeded {
            fingerNeeded = needed
            changed.append("finger-needed")
        }
        if let stages = stages.map({ Self.stages($0, identify: reader.supportsIdentify) }), stages != enrollStages {
            enrollStages = stages
            changed.append("num-enroll-stages")
        }
        bus.emitPropertiesChanged(path: path, interface: Fprintd.deviceInterface, names: changed)
    }

    /// Set when the reader was unplugged while claimed: the device stays on the bus until Release.
    var unplugged = false
    /// Called once an unplugged device's claim ends (the service then unexports it).
    var gone: (() -> Void)?

    /// Deletes that arrive while one runs wait for it (fprintd answers them one after the other).
    var waitingDeletes: [() -> Void] = []

    /// Senders with a Claim at the door (waiting for a turn, for polkit, or for the request of a
    /// claimer that left to end), and how many each.
    var claimsInFlight: [String: Int] = [:]
    /// Those of them that left the bus meanwhile: their Claim takes nothing.
    var vanishedClaimers: Set<String> = []
    /// Claims that wait for the request of a claimer that left the bus to end.
    var waitingClaims: [() -> Void] = []
    /// What the bus daemon stated of each sender that called (uid, pid), kept until its unique name
    /// leaves the bus (`clientVanished`): a unique name is never given to another connection while the
    /// bus runs, and the bus daemon's facts of a connection are those of its connect (`SO_PEERCRED`),
    /// never re-read. Authorisation is never kept: polkit is asked on every call as before. At most
    /// `knownSendersLimit` names (beyond, the bus is asked each time).
    var knownSenders: [String: (uid: UInt32, pid: Int32)] = [:]
    /// Each sender as the daemon's caller, built once at its first call as the socket builds one per
    /// connection at accept: the account of the stated uid (`getpwuid_r`) and the connecting process
    /// pinned (`PeerProcess`), kept with `knownSenders` until the name leaves the bus. A uid without an
    /// account is not kept (looked up again at the next call).
    var knownCallers: [String: PeerCredentials] = [:]
    static let knownSendersLimit = 1024
    /// Senders whose caller is being found (the bus daemon asked, then the account read and the process
    /// pinned off the queue), with their calls that wait for it, in arrival order. The queue serves
    /// everyone else meanwhile.
    var lookups: [String: [BusCall]] = [:]

    /// What finding a sender gave.
    enum Lookup {
        case noCredentials
        case noAccount(uid: UInt32)
        case found(PeerCredentials)
    }

    /// The caller for the uid and pid the bus daemon stated: its account, and its process pinned now,
    /// as the socket pins at accept (the pid is the process that connected to the bus; a setuid-root
    /// caller is counted under its real uid: issue 13, M2, L4). Blocking reads (NSS, /proc): never on
    /// the bus queue.
    static func caller(uid: UInt32, pid: Int32) -> Lookup {
        guard let (name, gid) = account(of: uid) else { return .noAccount(uid: uid) }
        return .found(
            PeerCredentials(pid: pid, uid: uid, gid: gid, userName: name, process: PeerProcess(pid: pid, pidfd: -1)))
    }

    /// A refusal of the daemon as fprintd's error.
    static func error(for result: Answer) -> BusError {
        switch result.code {
        case .notAuthorized: Fprintd.ErrorName.permissionDenied("Not Authorized: \(result.english)")
        case .biometryNotEnrolled, .notFound: Fprintd.ErrorName.noEnrolledPrints(result.english)
        default: Fprintd.ErrorName.internal(result.english)
        }
    }

    /// The account's name and primary group in one `getpwuid_r`: D-Bus tells the uid only.
    static func account(of uid: UInt32) -> (name: String, gid: UInt32)? {
        var pwd = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &pwd, &buffer, buffer.count, &result) == 0, result != nil, let name = pwd.pw_name else {
            return nil
        }
        return (String(cString: name), pwd.pw_gid)
    }
}
