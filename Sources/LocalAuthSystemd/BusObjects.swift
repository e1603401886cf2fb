// SPDX-License-Identifier: Apache-2.0
// The objects a BusConnection serves: an exported interface (its methods, signals and
// properties), the calls it receives, and their dispatch (methods, Properties, Introspect).
import CSystemd
import Dispatch

#if canImport(Glibc)
    import Glibc
#endif

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
    /// A signal or a property: a name and the signature of its value.
    public struct Member {
        public let member: String
        public let signature: String
        public init(member: String, signature: String) {
            self.member = member
            self.signature = signature
        }
    }
    public typealias Signal = Member
    public typealias Property = Member
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
    private unowned let connection: BusConnection?
    private var answered: [() -> Void] = []
    /// A call of an in-memory endpoint: where its answer goes, and what the sender's credentials are.
    private var memoryAnswer: ((Result<[BusValue], BusError>) -> Void)?
    private let memoryCredentials: (uid: UInt32, pid: Int32)?

    fileprivate init(message: OpaquePointer, connection: BusConnection?) {
        self.message = sd_bus_message_ref(message)
        self.connection = connection
        member = sd_bus_message_get_member(message).map { String(cString: $0) } ?? ""
        sender = sd_bus_message_get_sender(message).map { String(cString: $0) } ?? ""
        arguments = BusConnection.readAll(message)
        memoryCredentials = nil
    }

    /// A call that crossed no bus (an in-memory endpoint, for in-process tests of a service): the
    /// sender's unique name and credentials as a bus daemon would state them, and where the answer
    /// goes (on whatever thread answers it).
    public init(
        member: String, sender: String, arguments: [BusValue], credentials: (uid: UInt32, pid: Int32)?,
        answer: @escaping (Result<[BusValue], BusError>) -> Void
    ) {
        self.member = member
        self.sender = sender
        self.arguments = arguments
        self.connection = nil
        self.memoryCredentials = credentials
        self.memoryAnswer = answer
    }

    deinit {
        if !isAnswered { fail(BusError(name: "org.freedesktop.DBus.Error.Failed", message: "No answer")) }
    }

    public var isAnswered: Bool { message == nil && memoryAnswer == nil }

    /// Runs `body` once the call is answered (`reply`, `fail`, or dropped unanswered), where it is
    /// answered; at once when it already is.
    public func whenAnswered(_ body: @escaping () -> Void) {
        guard !isAnswered else { return body() }
        answered.append(body)
    }

    /// Answers an in-memory call; false for a call that came over a bus.
    private func answerInMemory(_ answer: Result<[BusValue], BusError>) -> Bool {
        guard let memoryAnswer else { return false }
        self.memoryAnswer = nil
        memoryAnswer(answer)
        tellAnswered()
        return true
    }

    private func tellAnswered() {
        let bodies = answered
        answered = []
        for body in bodies { body() }
    }

    public func string(_ index: Int) -> String? { index < arguments.count ? arguments[index].stringValue : nil }

    /// The sender's uid and pid as the bus daemon states them (`GetConnectionCredentials`: the
    /// `SO_PEERCRED` it read when the sender connected, never `/proc`), asked without waiting for the
    /// answer: `completion` runs on the connection's queue once the bus daemon has answered (at once
    /// for an in-memory call), with nil when it cannot tell (the sender has left the bus). Nothing
    /// else waits meanwhile: the queue serves other calls and replies until the answer comes.
    public func lookUpSender(_ completion: @escaping ((uid: UInt32, pid: Int32)?) -> Void) {
        if memoryAnswer != nil || connection == nil { return completion(memoryCredentials) }
        guard let connection, !sender.isEmpty else { return completion(nil) }
        connection.call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "GetConnectionCredentials", [.string(sender)]
        ) { result in
            guard case .success(let reply) = result else { return completion(nil) }
            completion(Self.stated(reply))
        }
    }

    /// The uid and pid of a `GetConnectionCredentials` answer (`a{sv}`: `UnixUserID`, `ProcessID`).
    static func stated(_ reply: [BusValue]) -> (uid: UInt32, pid: Int32)? {
        guard reply.count == 1, case .array(_, let entries) = reply[0] else { return nil }
        var uid: UInt32?
        var pid: UInt32?
        for case .dictEntry(.string(let key), .variant(.uint32(let value))) in entries {
            if key == "UnixUserID" { uid = value }
            if key == "ProcessID" { pid = value }
        }
        guard let uid, let pid, let processID = Int32(exactly: pid), processID > 0 else { return nil }
        return (uid, processID)
    }

    /// `sd_bus_message_new_method_return` with `values`, sent.
    public func reply(_ values: [BusValue] = []) {
        if answerInMemory(.success(values)) { return }
        guard let message else { return }
        self.message = nil
        defer { sd_bus_message_unref(message) }
        connection?.send { bus in
            var reply: OpaquePointer?
            guard sd_bus_message_new_method_return(message, &reply) >= 0, let reply else { return }
            defer { sd_bus_message_unref(reply) }
            for value in values where BusConnection.append(value, to: reply) < 0 { return }
            sd_bus_send(bus, reply, nil)
        }
        tellAnswered()
    }

    /// `sd_bus_reply_method_error`.
    public func fail(_ error: BusError) {
        if answerInMemory(.failure(error)) { return }
        guard let message else { return }
        self.message = nil
        defer { sd_bus_message_unref(message) }
        connection?.send { _ in
            var e = sd_bus_error()
            defer { sd_bus_error_free(&e) }
            sd_bus_error_set(&e, error.name, error.message)
            sd_bus_reply_method_error(message, &e)
        }
        tellAnswered()
    }
}

extension BusConnection {
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
}

/// An exported interface and the sd-bus slot that serves it.
final class ExportedInterface {
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
