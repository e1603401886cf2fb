// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthLocalization
import LocalAuthProtocol

/// Apple's `LAEnvironment` (macOS 15): the authentication mechanisms of the calling user, as the
/// daemon sees them, and observers told when they change.
///
/// `state` asks the daemon (one CAN_EVALUATE) each time it is read. While observers are registered,
/// one connection to the daemon watches (WATCH, docs/protocol.md): the daemon says when the
/// caller's environment may have changed, the state is asked again, and when it differs the
/// observers are called on a private serial queue, with the state before; `state` already reads the
/// new one (the daemon has made the change before it says so). Observers are held weakly, as
/// Apple's are: one that is deallocated is never called and is dropped; with none left, the
/// connection closes.
open class LAEnvironment: NSObject, @unchecked Sendable {
    /// The calling process's user.
    public static let currentUser = LAEnvironment()

    private let lock = NSLock()
    private var observers: [WeakObserver] = []
    /// The watch while observers are registered.
    private var watch: EnvironmentWatch?
    /// The private queue observers are called on, one at a time.
    let observerQueue = DispatchQueue(label: "localauth.LAEnvironment.observers")
    /// For tests: another daemon.
    var socketPath: String?
    var daemonSocket: String { socketPath ?? DaemonConnection.defaultSocketPath }

    override init() { super.init() }

    /// The mechanisms now.
    open var state: LAEnvironment.State {
        LAEnvironment.State(fetchingFrom: daemonSocket)
    }

    open func addObserver(_ observer: any LAEnvironment.Observer) {
        let started: EnvironmentWatch? = lock.withLock {
            observers.removeAll { $0.value == nil }
            if !observers.contains(where: { $0.value === observer }) { observers.append(WeakObserver(observer)) }
            guard watch == nil else { return nil }
            watch = EnvironmentWatch(environment: self, socketPath: daemonSocket)
            return watch
        }
        started?.start()
    }

    open func removeObserver(_ observer: any LAEnvironment.Observer) {
        let stopped: EnvironmentWatch? = lock.withLock {
            observers.removeAll { $0.value == nil || $0.value === observer }
            return observers.isEmpty ? takeWatch() : nil
        }
        stopped?.stop()
    }

    /// Whether a watch runs (for tests).
    var isWatching: Bool { lock.withLock { watch != nil } }
    /// Times a watch was put in place and the state read after it (for tests: changes from then on
    /// are told).
    var watchesInPlace: Int { lock.withLock { placed } }
    private var placed = 0
    fileprivate func watchInPlace() { lock.withLock { placed += 1 } }

    private func takeWatch() -> EnvironmentWatch? {
        defer { watch = nil }
        return watch
    }

    /// The observers still alive, held weakly; nil, and the watch ends, when none is left.
    fileprivate func liveObservers(of running: EnvironmentWatch) -> [WeakObserver]? {
        lock.withLock {
            observers.removeAll { $0.value == nil }
            guard watch === running else { return nil }
            if observers.isEmpty {
                watch = nil
                return nil
            }
            return observers
        }
    }

    /// Tells the observers, on the private queue, that the state changed from `old`. An observer
    /// deallocated before its turn is not called.
    fileprivate func tell(_ observers: [WeakObserver], old: LAEnvironment.State) {
        observerQueue.async {
            for observer in observers {
                observer.value?.environment(self, stateDidChangeFromOldState: old)
            }
        }
    }

    /// Weak, so never keeps an observer alive; unchecked: read on the private queue, written nowhere.
    fileprivate struct WeakObserver: @unchecked Sendable {
        weak var value: (any LAEnvironment.Observer)?
        init(_ value: any LAEnvironment.Observer) { self.value = value }
    }
}

/// The one connection of an `LAEnvironment` with observers: WATCH on a thread of its own (the
/// client is blocking), reconnecting with a growing pause when the daemon goes (restarted,
/// upgraded). It holds the environment weakly: an environment released ends its watch.
private final class EnvironmentWatch: @unchecked Sendable {
    private weak var environment: LAEnvironment?
    private let socketPath: String
    private let lock = NSLock()
    private var stopped = false
    private var connection: DaemonConnection?
    /// How often the thread looks whether its observers are still alive, without a change.
    static let lookMs: Int64 = 1000

    init(environment: LAEnvironment, socketPath: String) {
        self.environment = environment
        self.socketPath = socketPath
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "LAEnvironment watch"  // English: a thread name for debuggers
        thread.start()
    }

    /// Ends the watch: its connection closes now, its thread within a moment.
    func stop() {
        let open = lock.withLock { () -> DaemonConnection? in
            stopped = true
            return connection
        }
        open?.interrupt()
    }

    private var isStopped: Bool { lock.withLock { stopped } }

    /// The observers to tell, nil when the watch should end.
    private func observers() -> (LAEnvironment, [LAEnvironment.WeakObserver])? {
        guard !isStopped, let environment, let observers = environment.liveObservers(of: self) else { return nil }
        return (environment, observers)
    }

    /// The state now, as `LAEnvironment.state` reads it; nil when the daemon did not answer (which
    /// is no change to tell).
    private func fetch() -> LAEnvironment.State? {
        guard let connection = try? DaemonConnection(socketPath: socketPath, clientName: LAContext.clientName),
            let result = try? connection.perform(
                .canEvaluate(policy: .deviceOwnerAuthenticationWithBiometrics, user: nil), timeoutMs: 10_000)
        else { return nil }
        return LAEnvironment.State(canEvaluate: result)
    }

    private func run() {
        var last: LAEnvironment.State?
        var pauseMs: UInt32 = 250
        while observers() != nil {
            do {
                let connection = try DaemonConnection(socketPath: socketPath, clientName: LAContext.clientName)
                let keep = lock.withLock { () -> Bool in
                    if !stopped { self.connection = connection }
                    return !stopped
                }
                guard keep else { return }
                defer { lock.withLock { self.connection = nil } }
                try connection.send(Frame(.watch))
                var inPlace = false
                while true {
                    let message: ServerMessage
                    do {
                        message = try connection.receive(deadline: DaemonConnection.now() + Self.lookMs)
                    } catch .timedOut {
                        guard observers() != nil else { return }
                        continue
                    }
                    guard case .event(let event) = message, event.kind == .environmentChanged else { break }
                    pauseMs = 250
                    // The first EVENT says the watch is in place; each later one, a change maybe.
                    guard let now = fetch() else { break }  // the daemon is going: ask again once back
                    guard let (environment, observers) = observers() else { return }
                    if let old = last, !old.isEqual(now) { environment.tell(observers, old: old) }
                    last = now
                    if !inPlace { environment.watchInPlace() }
                    inPlace = true
                }
            } catch {}
            // The pause ends early when the watch does (no thread lingers for 30 s after it).
            let resume = DaemonConnection.now() + Int64(pauseMs)
            while DaemonConnection.now() < resume {
                guard observers() != nil else { return }
                usleep(100_000)
            }
            pauseMs = min(pauseMs * 2, 30_000)
        }
    }
}

extension LAEnvironment {
    /// Apple's `LAEnvironment.Observer` (Objective-C `LAEnvironmentObserver`).
    public protocol Observer: NSObjectProtocol {
        /// Optional in Apple's protocol. Called on a private queue; `environment.state` is already the new one.
        func environment(_ environment: LAEnvironment, stateDidChangeFromOldState oldState: LAEnvironment.State)
    }
}

extension LAEnvironment.Observer {
    /// Optional in Apple's protocol (an `@objc optional` requirement there; a default here).
    public func environment(_ environment: LAEnvironment, stateDidChangeFromOldState oldState: LAEnvironment.State) {}
}

extension LAEnvironment {
    /// Apple's `LAEnvironment.State` (Objective-C `LAEnvironmentState`): a snapshot.
    open class State: NSObject, @unchecked Sendable, NSCopying {
        /// nil when there is no reader (and none can be used).
        public let biometry: MechanismBiometry?
        /// The user's passcode (`localauthctl passcode set`): Linux's stand-in for the login password.
        public let userPassword: MechanismUserPassword?
        /// Always empty: Linux has no companion devices.
        public let companions: [MechanismCompanion] = []

        open var allMechanisms: [Mechanism] {
            [biometry, userPassword].compactMap { $0 } + companions
        }

        init(biometry: MechanismBiometry?, userPassword: MechanismUserPassword?) {
            self.biometry = biometry
            self.userPassword = userPassword
            super.init()
        }

        /// From one CAN_EVALUATE (biometrics) of the calling user; an unreachable daemon is "no mechanism".
        convenience init(fetchingFrom socket: String) {
            let result: RequestResult
            do {
                let connection = try DaemonConnection(socketPath: socket, clientName: LAContext.clientName)
                result = try connection.perform(
                    .canEvaluate(policy: .deviceOwnerAuthenticationWithBiometrics, user: nil), timeoutMs: 10_000)
            } catch {
                self.init(biometry: nil, userPassword: nil)
                return
            }
            self.init(canEvaluate: result)
        }

        /// The mapping of a CAN_EVALUATE result (separate for tests).
        convenience init(canEvaluate result: RequestResult) {
            let f = result.fields
            // A closed lid over a built-in reader: the daemon answers biometryType 0 (none usable), but
            // the reader is there, which is all `builtInSensorInaccessible` is for.
            let sensorInaccessible = f.bool(.sensorInaccessible) ?? false
            let readerPresent = (f.int(.biometryType) ?? 0) != 0 || sensorInaccessible
            let biometry =
                readerPresent
                ? MechanismBiometry(
                    isUsable: result.isSuccess, biometryType: .touchID, isEnrolled: f.bytes(.domainState) != nil,
                    isLockedOut: f.bool(.biometryLocked) ?? false, stateHash: Data(f.bytes(.domainState) ?? []),
                    builtInSensorInaccessible: sensorInaccessible) : nil
            let isSet = f.bool(.passcodeSet) ?? false
            self.init(biometry: biometry, userPassword: MechanismUserPassword(isSet: isSet))
        }

        public func copy(with zone: NSZone? = nil) -> Any { self }

        open override func isEqual(_ object: Any?) -> Bool {
            guard let other = object as? State else { return false }
            return biometry == other.biometry && userPassword == other.userPassword
        }
        open override var hash: Int { (biometry?.hash ?? 0) ^ (userPassword?.hash ?? 0) }
    }

    /// Apple's `LAEnvironment.Mechanism` (Objective-C `LAEnvironmentMechanism`).
    open class Mechanism: NSObject, @unchecked Sendable {
        public let isUsable: Bool
        public let localizedName: String
        /// An SF Symbols name, as Apple's; only a name on Linux.
        public let iconSystemName: String

        init(isUsable: Bool, localizedName: String, iconSystemName: String) {
            self.isUsable = isUsable
            self.localizedName = localizedName
            self.iconSystemName = iconSystemName
            super.init()
        }
    }

    /// Apple's `LAEnvironment.MechanismBiometry` (Objective-C `LAEnvironmentMechanismBiometry`).
    open class MechanismBiometry: Mechanism, @unchecked Sendable {
        public let biometryType: LABiometryType
        public let isEnrolled: Bool
        public let isLockedOut: Bool
        /// Changes exactly when the enrolled fingers change (the domain state); empty without fingers.
        public let stateHash: Data
        /// The reader is built in and the laptop's lid is closed.
        public let builtInSensorInaccessible: Bool

        init(
            isUsable: Bool, biometryType: LABiometryType, isEnrolled: Bool, isLockedOut: Bool, stateHash: Data,
            builtInSensorInaccessible: Bool
        ) {
            self.biometryType = biometryType
            self.isEnrolled = isEnrolled
            self.isLockedOut = isLockedOut
            self.stateHash = stateHash
            self.builtInSensorInaccessible = builtInSensorInaccessible
            super.init(isUsable: isUsable, localizedName: EnvironmentText.touchID, iconSystemName: "touchid")
        }

        open override func isEqual(_ object: Any?) -> Bool {
            guard let o = object as? MechanismBiometry else { return false }
            return (isUsable, isEnrolled, isLockedOut, stateHash, builtInSensorInaccessible)
                == (o.isUsable, o.isEnrolled, o.isLockedOut, o.stateHash, o.builtInSensorInaccessible)
        }
        open override var hash: Int { stateHash.hashValue ^ (isUsable ? 1 : 0) ^ (isLockedOut ? 2 : 0) }
    }

    /// Apple's `LAEnvironment.MechanismUserPassword` (Objective-C `LAEnvironmentMechanismUserPassword`): here,
    /// the daemon's passcode.
    open class MechanismUserPassword: Mechanism, @unchecked Sendable {
        public let isSet: Bool

        init(isSet: Bool) {
            self.isSet = isSet
            super.init(isUsable: isSet, localizedName: EnvironmentText.passcode, iconSystemName: "key.fill")
        }

        open override func isEqual(_ object: Any?) -> Bool {
            (object as? MechanismUserPassword)?.isSet == isSet
        }
        open override var hash: Int { isSet ? 1 : 0 }
    }

    /// Apple's `LAEnvironment.MechanismCompanion` (Objective-C `LAEnvironmentMechanismCompanion`); never
    /// present on Linux (no `type`: `LACompanionType` is absent).
    open class MechanismCompanion: Mechanism, @unchecked Sendable {
        public let stateHash: Data? = nil
    }
}

enum EnvironmentText {
    // TRANSLATORS: the fingerprint mechanism's name, as Apple calls it (LAEnvironmentMechanism.localizedName).
    static var touchID: String { tr("Touch ID") }
    // TRANSLATORS: the passcode mechanism's name (LAEnvironmentMechanism.localizedName).
    static var passcode: String { tr("Passcode") }
}
