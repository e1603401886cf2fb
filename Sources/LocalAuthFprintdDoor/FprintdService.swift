// SPDX-License-Identifier: Apache-2.0
import Dispatch
import LocalAuthDaemon
import LocalAuthDoorLimits
import LocalAuthSystemd

/// fprintd's D-Bus API (`net.reactivated.Fprint`) as a second door into the daemon: the Manager at
/// `/net/reactivated/Fprint/Manager`, one Device per reader at `/net/reactivated/Fprint/Device/N`
/// (numbered from 0 in the order readers appear, as fprintd numbers them). Runs on its own bus
/// connection and queue.
public final class FprintdService: @unchecked Sendable {
    private let bus: BusConnection
    private let polkit: Polkit
    private let backend: FprintdBackend
    private let audit: AuditLog
    private let gate: FprintdGate
    // On the bus queue.
    private var devices: [FprintdDevice] = []
    private var nextIndex = 0
    private var watchers: [Task<Void, Never>] = []

    /// Connects to the system bus, exports the Manager and a Device per present reader, follows
    /// hot-plug, and then owns `net.reactivated.Fprint` (so a client that sees the name sees the readers).
    /// Its callers meet the socket's per-uid limits and notice throttle (`FprintdGate`): the same
    /// `requests` turns and `throttle`, and at most `callsPerUID` calls at once (the socket's
    /// connections per uid).
    public init(
        daemon: Daemon, audit: AuditLog, requests: RequestGate, throttle: NoticeThrottle,
        callsPerUID: Int
    ) async throws {
        let queue = DispatchQueue(label: "localauthd.fprintd")
        let bus = try BusConnection(queue: queue)
        self.bus = bus
        self.polkit = Polkit(bus: bus)
        self.backend = daemon
        self.audit = audit
        self.gate = FprintdGate(
            requests: requests, throttle: throttle, callsPerUID: callsPerUID, audit: audit, queue: queue)
        bus.onLost { why in audit.notice("fprintd door: \(why); net.reactivated.Fprint is no longer served") }
        try bus.export(managerInterface, at: Fprintd.managerPath)
        try bus.onNameVanished { [unowned self] name in
            for device in self.devices { device.clientVanished(name) }
        }
        if let readers = daemon.readerWatch {
            let hotplug = readers.hotplug()
            let status = readers.status()
            let present = await readers.present()
            try queue.sync { for info in present { try self.add(info) } }
            watchers.append(
                Task { [weak self] in
                    for await event in hotplug {
                        guard let self else { return }
                        self.bus.queue.async {
                            switch event {
                            case .added(let info): try? self.add(info)
                            case .removed(let info): self.remove(info)
                            }
                        }
                    }
                })
            watchers.append(
                Task { [weak self] in
                    for await event in status {
                        guard let self else { return }
                        self.bus.queue.async {
                            for device in self.devices where device.reader.id == event.deviceID {
                                device.update(
                                    fingerPresent: event.fingerPresent, fingerNeeded: event.fingerNeeded,
                                    enrollStages: event.enrollStages, isSwipe: event.isSwipe)
                            }
                        }
                    }
                })
        }
        try bus.requestName(Fprintd.busName)
        audit.info("serving fprintd's D-Bus API as \(Fprintd.busName)")
    }

    /// Releases the name and closes the connection.
    public func shutdown() {
        for watcher in watchers { watcher.cancel() }
        bus.close()
    }

    private var managerInterface: BusInterface {
        BusInterface(
            name: Fprintd.managerInterface,
            methods: [
                .init(member: "GetDevices", signature: "", result: "ao"),
                .init(member: "GetDefaultDevice", signature: "", result: "o"),
            ],
            signals: [], properties: [],
            handle: { [unowned self] call in
                switch call.member {
                case "GetDevices":
                    call.reply([.objectPaths(self.devices.map(\.path))])
                case "GetDefaultDevice":
                    guard let first = self.devices.first else {
                        return call.fail(Fprintd.ErrorName.noSuchDevice("No devices available"))
                    }
                    call.reply([.objectPath(first.path)])
                default:
                    call.fail(BusError(name: "org.freedesktop.DBus.Error.UnknownMethod", message: call.member))
                }
            },
            property: { _ in nil })
    }

    private func add(_ info: ReaderDevice) throws {
        guard !devices.contains(where: { $0.reader.id == info.id && !$0.unplugged }) else { return }
        let device = FprintdDevice(
            index: nextIndex, reader: info, bus: bus, polkit: polkit, backend: backend, audit: audit,
            gate: gate)
        nextIndex += 1
        try bus.export(device.interface, at: device.path)
        device.gone = { [unowned self, unowned device] in self.unexport(device) }
        devices.append(device)
        audit.debug("fprintd door: \(info.name) is \(device.path)")
    }

    private func remove(_ info: ReaderDevice) {
        audit.info("fprintd door: \(info.name) went away")
        guard let device = devices.first(where: { $0.reader.id == info.id && !$0.unplugged }) else { return }
        if device.readerRemoved() { unexport(device) }
    }

    private func unexport(_ device: FprintdDevice) {
        guard let index = devices.firstIndex(where: { $0 === device }) else { return }
        audit.info("fprintd door: \(device.path) leaves the bus")
        devices.remove(at: index)
        bus.unexport(path: device.path)
    }
}
