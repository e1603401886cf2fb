// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthLocalization
import LocalAuthProtocol

/// Apple's `LAEnvironment` (macOS 15): the authentication mechanisms of the calling user, as the
/// daemon sees them, and observers told when they change.
///
/// The state is asked of the daemon (one CAN_EVALUATE) each time `state` is read; while observers
/// are registered it is asked once a second and observers are called (on a private queue) when it
/// differs — Apple's system pushes the change, `localauthd` has no push channel.
open class LAEnvironment: NSObject, @unchecked Sendable {
    /// The calling process's user.
    public static let currentUser = LAEnvironment()

    private let lock = NSLock()
    private var observers: [WeakObserver] = []
    private var polling = false
    private var last: LAEnvironment.State?
    /// For tests: another daemon, and how often observers' state is asked.
    var socketPath: String?
    var pollInterval: TimeInterval = 1

    override init() { super.init() }

    /// The mechanisms now.
    open var state: LAEnvironment.State {
        LAEnvironment.State(fetchingFrom: socketPath ?? DaemonConnection.defaultSocketPath)
    }

    open func addObserver(_ observer: any LAEnvironment.Observer) {
        let start = lock.withLock { () -> Bool in
            observers.removeAll { $0.value == nil }
            observers.append(WeakObserver(observer))
            defer { polling = true }
            return !polling
        }
        if start {
            let first = state
            lock.withLock { last = first }
            poll()
        }
    }

    open func removeObserver(_ observer: any LAEnvironment.Observer) {
        lock.withLock { observers.removeAll { $0.value == nil || $0.value === observer } }
    }

    private func poll() {
        DispatchQueue.global().asyncAfter(deadline: .now() + pollInterval) { [weak self] in
            guard let self else { return }
            let watching = self.lock.withLock { () -> [any LAEnvironment.Observer] in
                self.observers.removeAll { $0.value == nil }
                if self.observers.isEmpty { self.polling = false }
                return self.observers.compactMap(\.value)
            }
            guard !watching.isEmpty else { return }
            let now = self.state
            let old = self.lock.withLock { () -> LAEnvironment.State? in
                defer { self.last = now }
                return self.last
            }
            if let old, !old.isEqual(now) {
                for observer in watching { observer.environment(self, stateDidChangeFromOldState: old) }
            }
            self.poll()
        }
    }

    private struct WeakObserver {
        weak var value: (any LAEnvironment.Observer)?
        init(_ value: any LAEnvironment.Observer) { self.value = value }
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
            let readerPresent = (f.int(.biometryType) ?? 0) != 0
            let biometry =
                readerPresent
                ? MechanismBiometry(
                    isUsable: result.isSuccess, biometryType: .touchID, isEnrolled: f.bytes(.domainState) != nil,
                    isLockedOut: f.bool(.biometryLocked) ?? false, stateHash: Data(f.bytes(.domainState) ?? []),
                    builtInSensorInaccessible: f.bool(.sensorInaccessible) ?? false) : nil
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
