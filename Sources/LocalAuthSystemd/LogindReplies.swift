// SPDX-License-Identifier: Apache-2.0

/// logind's replies read: the pure half of `Logind`, which takes a reply's values as `BusValue`
/// reads them (`BusConnection.readAll`) and returns what they say, or nil when they are not what
/// logind sends. No bus, no queue: the calls are `Logind`'s.
extension Logind {
    /// The object paths of `uid`'s sessions that have a seat, from `ListSessions`' `a(susso)`.
    static func readSessionList(_ reply: [BusValue], uid: UInt32) -> [String]? {
        guard case .array(element: "(susso)", let sessions)? = reply.first else { return nil }
        var paths: [String] = []
        for session in sessions {
            guard case .structure(let members) = session, members.count == 5,
                case .string = members[0], case .uint32(let owner) = members[1], case .string = members[2],
                case .string(let seat) = members[3], case .objectPath(let path) = members[4]
            else { return nil }
            if owner == uid, !seat.isEmpty { paths.append(path) }
        }
        return paths
    }

    /// A session from the answer to its `GetAll` (`a{sv}`); properties not used here, of whatever
    /// type, are passed over. Nil without `User`, `Active` or `Remote`.
    static func readSession(_ reply: [BusValue], path: String) -> LoginSession? {
        guard case .array(element: "{sv}", let properties)? = reply.first else { return nil }
        var id = String(path.split(separator: "/").last ?? "")
        var owner: UInt32?
        var sessionClass = ""
        var seat: String?
        var active: Bool?
        var remote: Bool?
        for property in properties {
            guard case .dictEntry(.string(let name), .variant(let value)) = property else { return nil }
            switch (name, value) {
            case ("Id", .string(let value)): id = value
            case ("Class", .string(let value)): sessionClass = value
            case ("Active", .bool(let value)): active = value
            case ("Remote", .bool(let value)): remote = value
            case ("User", .structure(let members)):
                if members.count == 2, case .uint32(let uid) = members[0], case .objectPath = members[1] {
                    owner = uid
                }
            case ("Seat", .structure(let members)):
                if members.count == 2, case .string(let name) = members[0], case .objectPath = members[1] {
                    seat = name.isEmpty ? nil : name
                }
            default: break
            }
        }
        guard let owner, let active, let remote else { return nil }
        return LoginSession(
            id: id, ownerUID: owner, sessionClass: sessionClass, seat: seat, isActive: active, isRemote: remote)
    }

    /// The session path in `GetSessionByPID`'s answer (`o`).
    static func readSessionPath(_ reply: [BusValue]) -> String? {
        guard case .objectPath(let path)? = reply.first else { return nil }
        return path
    }

    /// `LidClosed` from the answer to its `Get` (`v` holding `b`).
    static func readLidClosed(_ reply: [BusValue]) -> Bool? {
        guard case .variant(.bool(let closed))? = reply.first else { return nil }
        return closed
    }
}
