// SPDX-License-Identifier: Apache-2.0
// An sd-bus object server and client, for the fprintd door (LocalAuthDaemon/Fprintd) and anything else
// the daemon serves on the system bus.
import CSystemd
import Dispatch

#if canImport(Glibc)
    import Glibc
#endif

/// A D-Bus value, as far as the fprintd and polkit APIs need them.
public indirect enum BusValue: Equatable, Sendable {
    case string(String)
    case objectPath(String)
    case bool(Bool)
    case int32(Int32)
    case uint32(UInt32)
    /// An array; `element` is the signature of its elements (needed when it is empty).
    case array(element: String, [BusValue])
    case structure([BusValue])
    case variant(BusValue)
    case dictEntry(BusValue, BusValue)

    public var signature: String {
        switch self {
        case .string: "s"
        case .objectPath: "o"
        case .bool: "b"
        case .int32: "i"
        case .uint32: "u"
        case .array(let element, _): "a" + element
        case .structure(let members): "(" + members.map(\.signature).joined() + ")"
        case .variant: "v"
        case .dictEntry(let key, let value): "{" + key.signature + value.signature + "}"
        }
    }

    public static func strings(_ values: [String]) -> BusValue { .array(element: "s", values.map { .string($0) }) }
    public static func objectPaths(_ values: [String]) -> BusValue {
        .array(element: "o", values.map { .objectPath($0) })
    }

    public var stringValue: String? {
        switch self {
        case .string(let s), .objectPath(let s): s
        default: nil
        }
    }
    public var boolValue: Bool? {
        if case .bool(let b) = self { b } else { nil }
    }
}

/// An error reply: a D-Bus error name and its message.
public struct BusError: Error, Equatable, Sendable {
    public let name: String
    public let message: String
    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }
}

/// An interface to export on an object path: its members (for checking calls and for introspection),
/// the method handler and the property getter. Everything runs on the connection's queue.
public struct BusInterface {
    public struct Method {
        public let member: String
        public let signature: String
        public let result: String
        public init(member: String, signature: String, result: String) {
            self.member = member
            self.signature = signature
            self.result = result
        }
    }
    public struct Signal {
        public let member: String
        public let signature: String
        public init(member: String, signature: String) {
            self.member = member
            self.signature = signature
        }
    }
    public struct Property {
        public let member: String
        public let signature: String
        public init(member: String, signature: String) {
            self.member = member
            self.signature = signature
        }
    }
    public let name: String
    public let methods: [Method]
    public let signals: [Signal]
    public let properties: [Property]
    public let handle: (BusCall) -> Void
    public let property: (String) -> BusValue?

    public init(
        name: String, methods: [Method], signals: [Signal], properties: [Property],
        handle: @escaping (BusCall) -> Void, property: @escaping (String) -> BusValue?
    ) {
        self.name = name
        self.methods = methods
        self.signals = signals
        self.properties = properties
        self.handle = handle
        self.property = property
    }

    /// `org.freedesktop.DBus.Introspectable.Introspect`'s XML for an object with this interface.
    var introspection: String {
        func args(_ signature: String, direction: String?) -> String {
            BusInterface.split(signature).map { type in
                "      <arg type=\"\(type)\"\(direction.map { " direction=\"\($0)\"" } ?? "")/>\n"
            }.joined()
        }
        var xml = """
            <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
            <node>
              <interface name="org.freedesktop.DBus.Introspectable">
                <method name="Introspect"><arg type="s" direction="out"/></method>
              </interface>
              <interface name="org.freedesktop.DBus.Peer">
                <method name="Ping"/>
                <method name="GetMachineId"><arg type="s" direction="out"/></method>
              </interface>
              <interface name="org.freedesktop.DBus.Properties">
                <method name="Get"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="v" direction="out"/></method>
                <method name="GetAll"><arg type="s" direction="in"/><arg type="a{sv}" direction="out"/></method>
                <method name="Set"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="v" direction="in"/></method>
                <signal name="PropertiesChanged"><arg type="s"/><arg type="a{sv}"/><arg type="as"/></signal>
              </interface>
              <interface name="\(name)">

            """
        for m in methods {
            xml +=
                "    <method name=\"\(m.member)\">\n" + args(m.signature, direction: "in")
                + args(m.result, direction: "out") + "    </method>\n"
        }
        for s in signals {
            xml += "    <signal name=\"\(s.member)\">\n" + args(s.signature, direction: nil) + "    </signal>\n"
        }
        for p in properties { xml += "    <property name=\"\(p.member)\" type=\"\(p.signature)\" access=\"read\"/>\n" }
        return xml + "  </interface>\n</node>\n"
    }

    /// A signature's complete types: "sb" → ["s", "b"], "asa{sv}" → ["as", "a{sv}"].
    static func split(_ signature: String) -> [String] {
        var types: [String] = []
        var current = ""
        var depth = 0
        for c in signature {
            current.append(c)
            switch c {
            case "(", "{": depth += 1
            case ")", "}": depth -= 1
            default: break
            }
            if depth == 0 && c != "a" {
                types.append(current)
                current = ""
            }
        }
        return types
    }
}

/// One method call received, to be answered once with `reply` or `fail`, now or later (on the
/// connection's queue). A call never answered is answered with an error when it is dropped.
public final class BusCall: @unchecked Sendable {
    public let member: String
    /// The sender's unique bus name (":1.42"), set by the bus daemon: it cannot be forged.
    public let sender: String
    public let arguments: [BusValue]
    private var message: OpaquePointer?
    private unowned let connection: BusConnection

    fileprivate init(message: OpaquePointer, connection: BusConnection) {
        self.message = sd_bus_message_ref(message)
        self.connection = connection
        member = sd_bus_message_get_member(message).map { String(cString: $0) } ?? ""
        sender = sd_bus_message_get_sender(message).map { String(cString: $0) } ?? ""
        arguments = BusConnection.readAll(message)
    }

    deinit {
        if message != nil { fail(BusError(name: "org.freedesktop.DBus.Error.Failed", message: "No answer")) }
    }

    public var isAnswered: Bool { message == nil }

    public func string(_ index: Int) -> String? { index < arguments.count ? arguments[index].stringValue : nil }

    /// The sender's uid and pid as the bus daemon knows them (`sd_bus_query_sender_creds`, which asks
    /// `GetConnectionCredentials`, never `/proc`); nil once answered or when the bus cannot tell.
    public func senderCredentials() -> (uid: UInt32, pid: Int32)? {
        guard let message else { return nil }
        var creds: OpaquePointer?
        let mask = UInt64(SD_BUS_CREDS_UID) | UInt64(SD_BUS_CREDS_EUID) | UInt64(SD_BUS_CREDS_PID)
        guard sd_bus_query_sender_creds(message, mask, &creds) >= 0, let creds else { return nil }
        defer { sd_bus_creds_unref(creds) }
        var uid: uid_t = 0
        var pid: pid_t = 0
        guard sd_bus_creds_get_euid(creds, &uid) >= 0 || sd_bus_creds_get_uid(creds, &uid) >= 0,
            sd_bus_creds_get_pid(creds, &pid) >= 0
        else { return nil }
        return (uid, pid)
    }

    /// `sd_bus_message_new_method_return` with `values`, sent.
    public func reply(_ values: [BusValue] = []) {
        guard let message else { return }
        self.message = nil
        defer { sd_bus_message_unref(message) }
        connection.send { bus in
            var reply: OpaquePointer?
            guard sd_bus_message_new_method_return(message, &reply) >= 0, let reply else { return }
            defer { sd_bus_message_unref(reply) }
            for value in values where BusConnection.append(value, to: reply) < 0 { return }
            sd_bus_send(bus, reply, nil)
        }
    }

    /// `sd_bus_reply_method_error`.
    public func fail(_ error: BusError) {
        guard let message else { return }
        self.message = nil
        defer { sd_bus_message_unref(message) }
        connection.send { _ in
            var e = sd_bus_error()
            defer { sd_bus_error_free(&e) }
            sd_bus_error_set(&e, error.name, error.message)
            sd_bus_reply_method_error(message, &e)
        }
    }
}

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

    /// Emits a signal from `path` to every listener.
    public func emitSignal(path: String, interface: String, member: String, _ values: [BusValue]) {
        send { bus in
            var m: OpaquePointer?
            guard sd_bus_message_new_signal(bus, &m, path, interface, member) >= 0, let m else { return }
            defer { sd_bus_message_unref(m) }
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
    fileprivate func send(_ body: @escaping (OpaquePointer) -> Void) {
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

    fileprivate func handle(_ message: OpaquePointer, entry: ExportedInterface) -> Int32 {
        var type: UInt8 = 0
        guard sd_bus_message_get_type(message, &type) >= 0, type == UInt8(SD_BUS_MESSAGE_METHOD_CALL) else { return 0 }
        let interfaceName = sd_bus_message_get_interface(message).map { String(cString: $0) }
        let member = sd_bus_message_get_member(message).map { String(cString: $0) } ?? ""
        let interface = entry.interface
        switch interfaceName {
        case interface.name, nil:
            guard let method = interface.methods.first(where: { $0.member == member }) else { return 0 }
            let call = BusCall(message: message, connection: self)
            guard sd_bus_message_has_signature(message, method.signature) > 0 else {
                call.fail(
                    BusError(
                        name: "org.freedesktop.DBus.Error.InvalidArgs",
                        message:
                            "\(member) takes (\(method.signature)), not (\(call.arguments.map(\.signature).joined()))"))
                return 1
            }
            interface.handle(call)
        case "org.freedesktop.DBus.Properties":
            let call = BusCall(message: message, connection: self)
            properties(call, interface: interface)
        case "org.freedesktop.DBus.Introspectable" where member == "Introspect":
            BusCall(message: message, connection: self).reply([.string(interface.introspection)])
        default:
            return 0
        }
        return 1
    }

    /// `Get`, `GetAll` and `Set` of `org.freedesktop.DBus.Properties` for an exported interface.
    private func properties(_ call: BusCall, interface: BusInterface) {
        func noInterface(_ name: String) -> BusError {
            BusError(name: "org.freedesktop.DBus.Error.UnknownInterface", message: "No interface \(name)")
        }
        switch (call.member, call.arguments.map(\.signature).joined()) {
        case ("Get", "ss"):
            let (name, property) = (call.string(0)!, call.string(1)!)
            guard name == interface.name else { return call.fail(noInterface(name)) }
            guard
                let value = interface.properties.contains(where: { $0.member == property })
                    ? interface.property(property) : nil
            else {
                return call.fail(
                    BusError(name: "org.freedesktop.DBus.Error.UnknownProperty", message: "No property \(property)"))
            }
            call.reply([.variant(value)])
        case ("GetAll", "s"):
            let name = call.string(0)!
            guard name == interface.name else { return call.fail(noInterface(name)) }
            let all = interface.properties.compactMap { p in
                interface.property(p.member).map { BusValue.dictEntry(.string(p.member), .variant($0)) }
            }
            call.reply([.array(element: "{sv}", all)])
        case ("Set", "ssv"):
            call.fail(
                BusError(name: "org.freedesktop.DBus.Error.PropertyReadOnly", message: "The properties are read-only"))
        default:
            call.fail(BusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "Bad \(call.member) call"))
        }
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

    // MARK: Values

    /// Appends one value (`sd_bus_message_append_basic`, `sd_bus_message_open_container`).
    static func append(_ value: BusValue, to m: OpaquePointer) -> Int32 {
        func basic(_ type: Character, _ pointer: UnsafeRawPointer) -> Int32 {
            sd_bus_message_append_basic(m, CChar(type.asciiValue!), pointer)
        }
        func container(_ type: Character, _ contents: String, _ members: [BusValue]) -> Int32 {
            var r = sd_bus_message_open_container(m, CChar(type.asciiValue!), contents)
            if r < 0 { return r }
            for member in members {
                r = append(member, to: m)
                if r < 0 { return r }
            }
            return sd_bus_message_close_container(m)
        }
        switch value {
        case .string(let s): return s.withCString { basic("s", $0) }
        case .objectPath(let s): return s.withCString { basic("o", $0) }
        case .bool(let b):
            var v: Int32 = b ? 1 : 0
            return basic("b", &v)
        case .int32(var v): return basic("i", &v)
        case .uint32(var v): return basic("u", &v)
        case .array(let element, let members): return container("a", element, members)
        case .structure(let members): return container("r", String(value.signature.dropFirst().dropLast()), members)
        case .variant(let inner): return container("v", inner.signature, [inner])
        case .dictEntry(let key, let inner):
            return container("e", key.signature + inner.signature, [key, inner])
        }
    }

    /// Reads every remaining value of a message (`sd_bus_message_peek_type` and friends); types the
    /// fprintd and polkit APIs do not use end the reading.
    static func readAll(_ m: OpaquePointer) -> [BusValue] {
        var values: [BusValue] = []
        while let value = read(m) { values.append(value) }
        return values
    }

    private static func read(_ m: OpaquePointer) -> BusValue? {
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        guard sd_bus_message_peek_type(m, &type, &contents) > 0 else { return nil }
        func readString() -> String? {
            var p: UnsafePointer<CChar>?
            guard sd_bus_message_read_basic(m, type, &p) > 0, let p else { return nil }
            return String(cString: p)
        }
        func members(_ kind: Character) -> [BusValue]? {
            guard sd_bus_message_enter_container(m, CChar(kind.asciiValue!), contents) > 0 else { return nil }
            let inner = readAll(m)
            guard sd_bus_message_exit_container(m) >= 0 else { return nil }
            return inner
        }
        switch UInt8(bitPattern: type) {
        case UInt8(ascii: "s"), UInt8(ascii: "g"): return readString().map { .string($0) }
        case UInt8(ascii: "o"): return readString().map { .objectPath($0) }
        case UInt8(ascii: "b"):
            var v: Int32 = 0
            return sd_bus_message_read_basic(m, type, &v) > 0 ? .bool(v != 0) : nil
        case UInt8(ascii: "i"):
            var v: Int32 = 0
            return sd_bus_message_read_basic(m, type, &v) > 0 ? .int32(v) : nil
        case UInt8(ascii: "u"):
            var v: UInt32 = 0
            return sd_bus_message_read_basic(m, type, &v) > 0 ? .uint32(v) : nil
        case UInt8(ascii: "a"):
            let element = contents.map { String(cString: $0) } ?? ""
            return members("a").map { .array(element: element, $0) }
        case UInt8(ascii: "r"): return members("r").map { .structure($0) }
        case UInt8(ascii: "e"):
            guard let pair = members("e"), pair.count == 2 else { return nil }
            return .dictEntry(pair[0], pair[1])
        case UInt8(ascii: "v"):
            guard let inner = members("v"), inner.count == 1 else { return nil }
            return .variant(inner[0])
        default:
            return nil
        }
    }
}

/// An exported interface and the sd-bus slot that serves it.
private final class ExportedInterface {
    let interface: BusInterface
    let path: String
    weak var connection: BusConnection?
    var slot: OpaquePointer?

    init(_ interface: BusInterface, path: String) {
        self.interface = interface
        self.path = path
    }

    static let messageArrived: sd_bus_message_handler_t = { message, userdata, _ in
        guard let message, let userdata else { return 0 }
        let entry = Unmanaged<ExportedInterface>.fromOpaque(userdata).takeUnretainedValue()
        guard let connection = entry.connection else { return 0 }
        return connection.handle(message, entry: entry)
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
