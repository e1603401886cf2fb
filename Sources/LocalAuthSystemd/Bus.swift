// SPDX-License-Identifier: Apache-2.0
// An sd-bus object server and client, for the fprintd door (LocalAuthFprintdDoor) and anything else
// the daemon serves on the system bus.
import CSystemd
import Dispatch

#if canImport(Glibc)
    import Glibc
#endif

/// One connection to the system bus (`sd_bus_open_system`, so `DBUS_SYSTEM_BUS_ADDRESS` when set),
/// driven on one serial queue, as `Logind` drives its own: sd-bus is not thread-safe, so every use of
/// the connection, every handler and every reply callback runs on `queue`. The queue waits on the
/// bus's fd (read, and write while output is queued) and on sd-bus's next timeout.
public final class BusConnection: @unchecked Sendable {
    public enum OpenError: Error, CustomStringConvertible {
        case failed(String, Int32)
        public var description: String {
            switch self {
            case .failed(let what, let errno): "\(what): \(String(cString: strerror(errno)))"
            }
        }
    }

    public let queue: DispatchQueue
    // On `queue` only.
    private var bus: OpaquePointer?
    private var readSource: DispatchSourceRead?
    private var writeSource: DispatchSourceWrite?
    private var writeSuspended = true
    private var timer: DispatchSourceTimer?
    private var processing = false
    private var exported: [ExportedInterface] = []
    private var pendingCalls: [Int: (box: PendingCall, completion: (Result<[BusValue], BusError>) -> Void)] = [:]
    private var nextCall = 1
    private var vanished: ((String) -> Void)?
    private var lost: ((String) -> Void)?

    /// Opens the system bus; the connection is served on `queue` from now on.
    public init(queue: DispatchQueue) throws {
        self.queue = queue
        var opened: OpaquePointer?
        let r = sd_bus_open_system(&opened)
        guard r >= 0, let opened else { throw OpenError.failed("cannot connect to the system bus", -r) }
        bus = opened
        queue.sync { self.startSources(opened) }
    }

    deinit {
        for entry in exported { sd_bus_slot_unref(entry.slot) }
        disconnect()
    }

    /// What to do when the connection is lost (the bus daemon went away).
    public func onLost(_ handler: @escaping (String) -> Void) { lost = handler }

    /// `sd_bus_request_name`: the well-known name, or an error when another connection owns it.
    public func requestName(_ name: String) throws {
        try onQueue { bus in
            let r = sd_bus_request_name(bus, name, 0)
            if r < 0 { throw OpenError.failed("cannot own \(name)", -r) }
        }
    }

    /// Follows `NameOwnerChanged`: `handler(name)` when a unique name leaves the bus.
    public func onNameVanished(_ handler: @escaping (String) -> Void) throws {
        try onQueue { bus in
            self.vanished = handler
            let r = sd_bus_match_signal(
                bus, nil, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                "NameOwnerChanged", BusConnection.nameOwnerChanged, Unmanaged.passUnretained(self).toOpaque())
            if r < 0 { throw OpenError.failed("cannot follow NameOwnerChanged", -r) }
        }
    }

    /// `sd_bus_add_object`: serves `interface` at `path` until `unexport`: its methods (arguments checked
    /// against their signatures), `org.freedesktop.DBus.Properties` and `Introspectable`. Not an sd-bus
    /// vtable, because fprintd's property names (`num-enroll-stages`) are not valid D-Bus member names
    /// and sd-bus refuses them there; GDBus, which fprintd and its clients use, accepts them.
    public func export(_ interface: BusInterface, at path: String) throws {
        try onQueue { bus in
            let entry = ExportedInterface(interface, path: path)
            entry.connection = self
            let r = sd_bus_add_object(
                bus, &entry.slot, path, ExportedInterface.messageArrived, Unmanaged.passUnretained(entry).toOpaque())
            if r < 0 { throw OpenError.failed("cannot export \(interface.name) at \(path)", -r) }
            self.exported.append(entry)
        }
    }

    /// Removes what `export` put at `path` (`sd_bus_slot_unref`).
    public func unexport(path: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        for entry in exported where entry.path == path {
            sd_bus_slot_unref(entry.slot)
            entry.slot = nil
        }
        exported.removeAll { $0.path == path }
    }

    /// Emits a signal from `path`: to every listener, or with a `destination` (a unique name) to
    /// that connection only (a unicast signal: no other connection's match rule receives it, and the
    /// bus policy lets only root eavesdrop).
    public func emitSignal(
        path: String, interface: String, member: String, _ values: [BusValue], destination: String? = nil
    ) {
        send { bus in
            var m: OpaquePointer?
            guard sd_bus_message_new_signal(bus, &m, path, interface, member) >= 0, let m else { return }
            defer { sd_bus_message_unref(m) }
            if let destination, sd_bus_message_set_destination(m, destination) < 0 { return }
            for value in values where Self.append(value, to: m) < 0 { return }
            sd_bus_send(bus, m, nil)
        }
    }

    /// `org.freedesktop.DBus.Properties.PropertiesChanged` with the new values of `names`.
    public func emitPropertiesChanged(path: String, interface: String, names: [String]) {
        guard !names.isEmpty else { return }
        send { _ in
            guard let entry = self.exported.first(where: { $0.path == path && $0.interface.name == interface })
            else { return }
            let changed = names.compactMap { name in
                entry.interface.property(name).map { BusValue.dictEntry(.string(name), .variant($0)) }
            }
            self.emitSignal(
                path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                [.string(interface), .array(element: "{sv}", changed), .array(element: "s", [])])
        }
    }

    /// Calls a method and hands its answer to `completion` on the queue; `timeoutUsec` 0 is sd-bus's
    /// default (25 s).
    public func call(
        destination: String, path: String, interface: String, member: String, _ arguments: [BusValue],
        timeoutUsec: UInt64 = 0, completion: @escaping (Result<[BusValue], BusError>) -> Void
    ) {
        send { bus in
            var m: OpaquePointer?
            guard sd_bus_message_new_method_call(bus, &m, destination, path, interface, member) >= 0, let m else {
                completion(.failure(BusError(name: "org.freedesktop.DBus.Error.NoMemory", message: "no message")))
                return
            }
            defer { sd_bus_message_unref(m) }
            for argument in arguments where Self.append(argument, to: m) < 0 {
                completion(.failure(BusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "bad argument")))
                return
            }
            let box = PendingCall(connection: self, key: self.nextCall)
            self.nextCall += 1
            self.pendingCalls[box.key] = (box, completion)
            let r = sd_bus_call_async(
                bus, nil, m, Self.replyArrived, Unmanaged.passUnretained(box).toOpaque(), timeoutUsec)
            if r < 0 {
                self.pendingCalls[box.key] = nil
                completion(
                    .failure(BusError(name: "org.freedesktop.DBus.Error.Failed", message: "cannot call \(member)")))
            }
        }
    }

    /// Closes the connection (`sd_bus_flush_close_unref`); pending calls are forgotten.
    public func close() {
        queue.sync {
            for entry in exported {
                sd_bus_slot_unref(entry.slot)
                entry.slot = nil
            }
            exported.removeAll()
            pendingCalls.removeAll()
            disconnect()
        }
    }

    // MARK: On the queue

    private func onQueue<T>(_ body: (OpaquePointer) throws -> T) throws -> T {
        try withoutActuallyEscaping(body) { body in
            let run = { () throws -> T in
                guard let bus = self.bus else { throw OpenError.failed("the bus connection is closed", ENOTCONN) }
                defer { self.pump() }
                return try body(bus)
            }
            if DispatchQueue.getSpecific(key: Self.queueKey) == ObjectIdentifier(self) { return try run() }
            return try queue.sync(execute: run)
        }
    }

    /// Runs `body` with the bus on the queue (at once when already there), then flushes what it queued.
    func send(_ body: @escaping (OpaquePointer) -> Void) {
        let run = {
            guard let bus = self.bus else { return }
            body(bus)
            self.pump()
        }
        if DispatchQueue.getSpecific(key: Self.queueKey) == ObjectIdentifier(self) {
            run()
        } else {
            // Everything the closure touches is used on the queue only.
            let confined = QueueConfined(run)
            queue.async { confined.value() }
        }
    }

    private static let queueKey = DispatchSpecificKey<ObjectIdentifier>()

    private func startSources(_ bus: OpaquePointer) {
        queue.setSpecific(key: Self.queueKey, value: ObjectIdentifier(self))
        let fd = sd_bus_get_fd(bus)
        let read = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        read.setEventHandler { [unowned self] in self.pump() }
        read.resume()
        let write = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
        write.setEventHandler { [unowned self] in self.pump() }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.setEventHandler { [unowned self] in self.pump() }
        timer.resume()
        readSource = read
        writeSource = write
        writeSuspended = true
        self.timer = timer
        pump()
    }

    /// `sd_bus_process` until idle, then waits for what sd-bus asks for next (`sd_bus_get_events`,
    /// `sd_bus_get_timeout`). Never re-entered: sd-bus forbids processing inside its own callbacks.
    private func pump() {
        guard !processing, let bus else { return }
        processing = true
        while let current = self.bus {
            let r = sd_bus_process(current, nil)
            if r < 0 {
                processing = false
                let why = "lost the system bus (\(String(cString: strerror(-r))))"
                disconnect()
                lost?(why)
                return
            }
            if r == 0 { break }
        }
        processing = false
        guard self.bus == bus else { return }
        let wantsWrite = Int16(sd_bus_get_events(bus)) & Int16(POLLOUT) != 0
        if wantsWrite && writeSuspended {
            writeSource?.resume()
            writeSuspended = false
        } else if !wantsWrite && !writeSuspended {
            writeSource?.suspend()
            writeSuspended = true
        }
        var until: UInt64 = 0
        if sd_bus_get_timeout(bus, &until) >= 0 && until != UInt64.max {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let nowUsec = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
            let delay = until > nowUsec ? until - nowUsec : 0
            timer?.schedule(deadline: .now() + .microseconds(Int(min(delay, UInt64(Int32.max)))))
        } else {
            timer?.schedule(deadline: .distantFuture)
        }
    }

    private func disconnect() {
        guard let bus else { return }
        self.bus = nil
        timer?.cancel()
        if writeSuspended { writeSource?.resume() }  // a suspended source cannot be cancelled
        writeSource?.cancel()
        readSource?.setCancelHandler { sd_bus_flush_close_unref(bus) }
        readSource?.cancel()
        readSource = nil
        writeSource = nil
        timer = nil
    }

    private static let replyArrived: sd_bus_message_handler_t = { message, userdata, _ in
        guard let message, let userdata else { return 0 }
        let box = Unmanaged<PendingCall>.fromOpaque(userdata).takeUnretainedValue()
        guard let connection = box.connection,
            let completion = connection.pendingCalls.removeValue(forKey: box.key)?.completion
        else { return 0 }
        if sd_bus_message_is_method_error(message, nil) > 0, let error = sd_bus_message_get_error(message) {
            completion(
                .failure(
                    BusError(
                        name: error.pointee.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed",
                        message: error.pointee.message.map { String(cString: $0) } ?? "")))
        } else {
            completion(.success(BusConnection.readAll(message)))
        }
        return 1
    }

    private static let nameOwnerChanged: sd_bus_message_handler_t = { message, userdata, _ in
        guard let message, let userdata else { return 0 }
        let connection = Unmanaged<BusConnection>.fromOpaque(userdata).takeUnretainedValue()
        let values = BusConnection.readAll(message)
        guard values.count == 3, let name = values[0].stringValue, let new = values[2].stringValue,
            name.hasPrefix(":"), new.isEmpty
        else { return 0 }
        connection.vanished?(name)
        return 0
    }
}

/// A value handed to the connection's queue and used only there.
private struct QueueConfined<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// The userdata of an asynchronous call: finds the completion when the reply arrives.
private final class PendingCall {
    weak var connection: BusConnection?
    let key: Int
    init(connection: BusConnection, key: Int) {
        self.connection = connection
        self.key = key
    }
}
