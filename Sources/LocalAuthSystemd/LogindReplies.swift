// SPDX-License-Identifier: Apache-2.0
import CSystemd

/// logind's replies read: the pure half of `Logind`, which takes an sd-bus message and returns
/// what it says, or nil when it is not what logind sends. No bus, no queue: the calls are `Logind`'s.
extension Logind {
    /// The object paths of `uid`'s sessions that have a seat, from `ListSessions`' `a(susso)`.
    static func readSessionList(_ reply: OpaquePointer, uid: UInt32) -> [String]? {
        guard sd_bus_message_enter_container(reply, CChar(UInt8(ascii: "a")), "(susso)") > 0 else { return nil }
        var paths: [String] = []
        while sd_bus_message_enter_container(reply, CChar(UInt8(ascii: "r")), "susso") > 0 {
            var id: UnsafePointer<CChar>?
            var owner: UInt32 = 0
            var name: UnsafePointer<CChar>?
            var seat: UnsafePointer<CChar>?
            var path: UnsafePointer<CChar>?
            guard sd_bus_message_read_basic(reply, CChar(UInt8(ascii: "s")), &id) >= 0,
                sd_bus_message_read_basic(reply, CChar(UInt8(ascii: "u")), &owner) >= 0,
                sd_bus_message_read_basic(reply, CChar(UInt8(ascii: "s")), &name) >= 0,
                sd_bus_message_read_basic(reply, CChar(UInt8(ascii: "s")), &seat) >= 0,
                sd_bus_message_read_basic(reply, CChar(UInt8(ascii: "o")), &path) >= 0,
                sd_bus_message_exit_container(reply) >= 0
            else { return nil }
            if owner == uid, let seat, seat.pointee != 0, let path { paths.append(String(cString: path)) }
        }
        return paths
    }

    /// A session from the answer to its `GetAll`.
    static func readSession(_ reply: OpaquePointer, path: String) -> LoginSession? {
        var id = String(path.split(separator: "/").last ?? "")
        var owner: UInt32?
        var sessionClass = ""
        var seat: String?
        var active: Bool?
        var remote: Bool?
        guard sd_bus_message_enter_container(reply, CChar(UInt8(ascii: "a")), "{sv}") > 0 else { return nil }
        while sd_bus_message_enter_container(reply, CChar(UInt8(ascii: "e")), "sv") > 0 {
            var key: UnsafePointer<CChar>?
            guard sd_bus_message_read_basic(reply, CChar(UInt8(ascii: "s")), &key) >= 0, let key else { return nil }
            let name = String(cString: key)
            var contents: UnsafePointer<CChar>?
            var type: CChar = 0
            guard sd_bus_message_peek_type(reply, &type, &contents) >= 0, let contents else { return nil }
            let signature = String(cString: contents)
            guard sd_bus_message_enter_container(reply, CChar(UInt8(ascii: "v")), contents) > 0 else { return nil }
            switch (name, signature) {
            case ("Id", "s"): id = Self.readString(reply) ?? id
            case ("Class", "s"): sessionClass = Self.readString(reply) ?? ""
            case ("Active", "b"): active = Self.readBool(reply)
            case ("Remote", "b"): remote = Self.readBool(reply)
            case ("User", "(uo)"):
                if sd_bus_message_enter_container(reply, CChar(UInt8(ascii: "r")), "uo") > 0 {
                    owner = Self.readUInt32(reply)
                    sd_bus_message_skip(reply, "o")
                    sd_bus_message_exit_container(reply)
                }
            case ("Seat", "(so)"):
                if sd_bus_message_enter_container(reply, CChar(UInt8(ascii: "r")), "so") > 0 {
                    seat = Self.readString(reply).flatMap { $0.isEmpty ? nil : $0 }
                    sd_bus_message_skip(reply, "o")
                    sd_bus_message_exit_container(reply)
                }
            default:
                sd_bus_message_skip(reply, contents)
            }
            guard sd_bus_message_exit_container(reply) >= 0, sd_bus_message_exit_container(reply) >= 0 else {
                return nil
            }
        }
        guard let owner, let active, let remote else { return nil }
        return LoginSession(
            id: id, ownerUID: owner, sessionClass: sessionClass, seat: seat, isActive: active, isRemote: remote)
    }

    static func readBool(_ message: OpaquePointer) -> Bool? {
        var value: Int32 = 0
        return sd_bus_message_read_basic(message, CChar(UInt8(ascii: "b")), &value) >= 0 ? value != 0 : nil
    }

    static func readUInt32(_ message: OpaquePointer) -> UInt32? {
        var value: UInt32 = 0
        return sd_bus_message_read_basic(message, CChar(UInt8(ascii: "u")), &value) >= 0 ? value : nil
    }

    static func readString(_ message: OpaquePointer) -> String? {
        var value: UnsafePointer<CChar>?
        guard sd_bus_message_read_basic(message, CChar(UInt8(ascii: "s")), &value) >= 0, let value else { return nil }
        return String(cString: value)
    }
}
