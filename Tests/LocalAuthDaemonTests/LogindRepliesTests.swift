// SPDX-License-Identifier: Apache-2.0
import CSystemd
import Glibc
import Testing

@testable import LocalAuthSystemd

/// logind's replies as `BusValue` reads them from a real sd-bus message, and the pure readers over
/// those values. The messages are built on a connection that never reaches a bus: one end of a
/// socket pair, started (so sd-bus lets it make messages) and never answered.
@Suite struct LogindRepliesTests {
    /// A sealed method-call message whose arguments `append` writes, read back with `readAll`.
    static func readBack(_ append: (OpaquePointer) -> Int32) throws -> [BusValue] {
        var fds: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0)
        defer { close(fds[1]) }
        var bus: OpaquePointer?
        try #require(sd_bus_new(&bus) >= 0)
        defer { sd_bus_flush_close_unref(bus) }
        try #require(sd_bus_set_fd(bus, fds[0], fds[0]) >= 0)  // the bus owns fds[0] from here
        try #require(sd_bus_start(bus) >= 0)
        var message: OpaquePointer?
        try #require(
            sd_bus_message_new_method_call(
                bus, &message, "org.example.Test", "/org/example/Test", "org.example.Test", "M")
                >= 0)
        let m = try #require(message)
        defer { sd_bus_message_unref(m) }
        try #require(append(m) >= 0)
        try #require(sd_bus_message_seal(m, 1, 0) >= 0)
        try #require(sd_bus_message_rewind(m, 1) >= 0)
        return BusConnection.readAll(m)
    }

    /// Appends a basic value of type `type` from `value`'s bytes.
    static func basic<T: BitwiseCopyable>(_ m: OpaquePointer, _ type: Character, _ value: T) -> Int32 {
        var value = value
        return sd_bus_message_append_basic(m, CChar(type.asciiValue!), &value)
    }

    static func open(_ m: OpaquePointer, _ type: Character, _ contents: String, _ body: () -> Int32) -> Int32 {
        let r = sd_bus_message_open_container(m, CChar(type.asciiValue!), contents)
        if r < 0 { return r }
        let b = body()
        if b < 0 { return b }
        return sd_bus_message_close_container(m)
    }

    /// `{sv}` with a value of signature `signature` that `value` appends.
    static func property(_ m: OpaquePointer, _ name: String, _ signature: String, _ value: () -> Int32) -> Int32 {
        open(m, "e", "sv") {
            let r = name.withCString { sd_bus_message_append_basic(m, CChar(UInt8(ascii: "s")), $0) }
            if r < 0 { return r }
            return open(m, "v", signature, value)
        }
    }

    static func string(_ m: OpaquePointer, _ type: Character, _ s: String) -> Int32 {
        s.withCString { sd_bus_message_append_basic(m, CChar(type.asciiValue!), $0) }
    }

    @Test func readAll_whenAMessageCarriesTypesItDoesNotModel_skipsEachAndReadsWhatFollows() throws {
        let values = try Self.readBack { m in
            var r = Self.string(m, "s", "before")
            r = min(r, Self.basic(m, "t", UInt64(1_700_000_000_000_000)))
            r = min(r, Self.basic(m, "x", Int64(-5)))
            r = min(r, Self.basic(m, "q", UInt16(7)))
            r = min(r, Self.basic(m, "n", Int16(-7)))
            r = min(r, Self.basic(m, "y", UInt8(3)))
            r = min(r, Self.basic(m, "d", Double(0.5)))
            r = min(r, Self.open(m, "a", "t") { min(Self.basic(m, "t", UInt64(1)), Self.basic(m, "t", UInt64(2))) })
            r = min(r, Self.open(m, "v", "t") { Self.basic(m, "t", UInt64(3)) })
            r = min(r, Self.open(m, "r", "ty") { min(Self.basic(m, "t", UInt64(4)), Self.basic(m, "y", UInt8(5))) })
            r = min(r, Self.basic(m, "b", Int32(1)))
            return r
        }
        #expect(
            values == [
                .string("before"), .unmodeled(signature: "t"), .unmodeled(signature: "x"),
                .unmodeled(signature: "q"), .unmodeled(signature: "n"), .unmodeled(signature: "y"),
                .unmodeled(signature: "d"),
                .array(element: "t", [.unmodeled(signature: "t"), .unmodeled(signature: "t")]),
                .variant(.unmodeled(signature: "t")),
                .structure([.unmodeled(signature: "t"), .unmodeled(signature: "y")]), .bool(true),
            ])
    }

    @Test func append_whenAValueIsUnmodeled_refusesIt() {
        #expect(BusValue.unmodeled(signature: "t").signature == "t")
        var fds: [Int32] = [-1, -1]
        _ = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds)
        var bus: OpaquePointer?
        _ = sd_bus_new(&bus)
        defer { sd_bus_flush_close_unref(bus) }
        _ = sd_bus_set_fd(bus, fds[0], fds[0])
        _ = sd_bus_start(bus)
        defer { close(fds[1]) }
        var message: OpaquePointer?
        _ = sd_bus_message_new_method_call(bus, &message, "org.example.Test", "/", "org.example.Test", "M")
        defer { sd_bus_message_unref(message) }
        guard let message else {
            Issue.record("no message")
            return
        }
        #expect(BusConnection.append(.unmodeled(signature: "t"), to: message) < 0)
    }

    /// A session's `GetAll` as systemd's logind answers it: timestamps (`t`), the VT (`u`), the
    /// leader, and more besides the properties read — python-dbusmock's has fewer.
    @Test func readSession_whenGetAllCarriesRealLogindsTimestamps_readsTheSession() throws {
        let values = try Self.readBack { m in
            Self.open(m, "a", "{sv}") {
                var r = Self.property(m, "Id", "s") { Self.string(m, "s", "3") }
                r = min(r, Self.property(m, "Timestamp", "t") { Self.basic(m, "t", UInt64(1_764_300_000_000_000)) })
                r = min(r, Self.property(m, "TimestampMonotonic", "t") { Self.basic(m, "t", UInt64(12_345_678)) })
                r = min(
                    r,
                    Self.property(m, "User", "(uo)") {
                        Self.open(m, "r", "uo") {
                            min(
                                Self.basic(m, "u", UInt32(1000)),
                                Self.string(m, "o", "/org/freedesktop/login1/user/_1000"))
                        }
                    })
                r = min(
                    r,
                    Self.property(m, "Seat", "(so)") {
                        Self.open(m, "r", "so") {
                            min(Self.string(m, "s", "seat0"), Self.string(m, "o", "/org/freedesktop/login1/seat/seat0"))
                        }
                    })
                r = min(r, Self.property(m, "VTNr", "u") { Self.basic(m, "u", UInt32(2)) })
                r = min(r, Self.property(m, "Class", "s") { Self.string(m, "s", "user") })
                r = min(r, Self.property(m, "Remote", "b") { Self.basic(m, "b", Int32(0)) })
                r = min(r, Self.property(m, "IdleSinceHint", "t") { Self.basic(m, "t", UInt64(0)) })
                r = min(r, Self.property(m, "Active", "b") { Self.basic(m, "b", Int32(1)) })
                r = min(r, Self.property(m, "Leader", "u") { Self.basic(m, "u", UInt32(812)) })
                return r
            }
        }
        #expect(
            Logind.readSession(values, path: "/org/freedesktop/login1/session/_33")
                == LoginSession(
                    id: "3", ownerUID: 1000, sessionClass: "user", seat: "seat0", isActive: true, isRemote: false))
    }

    // MARK: The readers over values

    static func sessionRow(_ id: String, _ uid: UInt32, seat: String) -> BusValue {
        .structure([
            .string(id), .uint32(uid), .string("user\(uid)"), .string(seat),
            .objectPath("/org/freedesktop/login1/session/_3\(id)"),
        ])
    }

    @Test func readSessionList_keepsOnlyTheUsersSeatedSessions() {
        let reply: [BusValue] = [
            .array(
                element: "(susso)",
                [
                    Self.sessionRow("1", 1000, seat: "seat0"), Self.sessionRow("2", 1000, seat: ""),
                    Self.sessionRow("3", 1001, seat: "seat0"), Self.sessionRow("4", 1000, seat: "seat1"),
                ])
        ]
        #expect(
            Logind.readSessionList(reply, uid: 1000) == [
                "/org/freedesktop/login1/session/_31", "/org/freedesktop/login1/session/_34",
            ])
        #expect(Logind.readSessionList([.array(element: "(susso)", [])], uid: 1000) == [])
    }

    @Test func readSessionList_whenTheReplyIsNotListSessions_isNil() {
        #expect(Logind.readSessionList([], uid: 1000) == nil)
        #expect(Logind.readSessionList([.strings(["1"])], uid: 1000) == nil)
        #expect(
            Logind.readSessionList(
                [.array(element: "(susso)", [.structure([.string("1"), .uint32(1000)])])], uid: 1000)
                == nil)
    }

    static func getAll(_ properties: [String: BusValue]) -> [BusValue] {
        [.array(element: "{sv}", properties.sorted { $0.key < $1.key }.map { .dictEntry(.string($0), .variant($1)) })]
    }

    static let complete: [String: BusValue] = [
        "Id": .string("c2"), "Class": .string("greeter"), "Active": .bool(false), "Remote": .bool(true),
        "User": .structure([.uint32(1001), .objectPath("/org/freedesktop/login1/user/_1001")]),
        "Seat": .structure([.string("seat0"), .objectPath("/org/freedesktop/login1/seat/seat0")]),
    ]

    @Test func readSession_readsIdClassActiveRemoteUserAndSeat() {
        #expect(
            Logind.readSession(Self.getAll(Self.complete), path: "/org/freedesktop/login1/session/c2")
                == LoginSession(
                    id: "c2", ownerUID: 1001, sessionClass: "greeter", seat: "seat0", isActive: false, isRemote: true))
    }

    @Test func readSession_whenTheSeatIsEmpty_hasNoSeat() {
        var properties = Self.complete
        properties["Seat"] = .structure([.string(""), .objectPath("/")])
        #expect(Logind.readSession(Self.getAll(properties), path: "/x/c2")?.seat == nil)
        #expect(Logind.readSession(Self.getAll(properties), path: "/x/c2")?.ownerUID == 1001)
    }

    @Test func readSession_whenIdIsMissing_takesItFromThePath() {
        var properties = Self.complete
        properties["Id"] = nil
        #expect(Logind.readSession(Self.getAll(properties), path: "/org/freedesktop/login1/session/_37")?.id == "_37")
    }

    @Test func readSession_whenActiveRemoteOrUserIsMissing_isNil() {
        for name in ["Active", "Remote", "User"] {
            var properties = Self.complete
            properties[name] = nil
            #expect(Logind.readSession(Self.getAll(properties), path: "/x/c2") == nil, "without \(name)")
        }
        var wrongType = Self.complete
        wrongType["Active"] = .string("yes")
        #expect(Logind.readSession(Self.getAll(wrongType), path: "/x/c2") == nil)
        #expect(Logind.readSession([], path: "/x/c2") == nil)
    }

    @Test func readSessionPath_andReadLidClosed_readTheirAnswers() {
        #expect(
            Logind.readSessionPath([.objectPath("/org/freedesktop/login1/session/_32")])
                == "/org/freedesktop/login1/session/_32")
        #expect(Logind.readSessionPath([.string("/not/a/path")]) == nil)
        #expect(Logind.readSessionPath([]) == nil)
        #expect(Logind.readLidClosed([.variant(.bool(true))]) == true)
        #expect(Logind.readLidClosed([.variant(.bool(false))]) == false)
        #expect(Logind.readLidClosed([.variant(.string("closed"))]) == nil)
        #expect(Logind.readLidClosed([.bool(true)]) == nil)
    }
}
