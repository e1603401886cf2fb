// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import LocalAuthDaemon

/// The authorisation table of docs/security.md, cell by cell.
@Suite struct AuthorizationTests {
    static let root = PeerCredentials(pid: 1, uid: 0, gid: 0, userName: "root")
    static let alice = PeerCredentials(pid: 2, uid: 1000, gid: 1000, userName: "alice")
    static let nameless = PeerCredentials(pid: 3, uid: 4242, gid: 4242, userName: nil)

    /// Operations any user may do for their own account.
    static let selfService: [Operation] = [
        .status, .canEvaluate, .evaluate, .enroll, .list, .delete, .passcodeSet, .passcodeRemove, .rightSave,
        .rightGet, .rightUse, .rightRemove, .claimReader, .releaseReader,
    ]

    /// A right is read and used by its owner alone.
    static let ownerOnly: [Operation] = [.rightSave, .rightGet, .rightUse]

    @Test(arguments: Operation.allCases.filter { !ownerOnly.contains($0) })
    func root_mayDoEverythingElseForAnyone(_ op: Operation) {
        #expect(Authorization.decide(op, caller: Self.root, target: "alice") == .allowed)
        #expect(Authorization.decide(op, caller: Self.root, target: nil) == .allowed)
    }

    @Test(arguments: ownerOnly)
    func root_neverReadsOrUsesAnotherAccountsRight_butItsOwn(_ op: Operation) {
        #expect(Authorization.decide(op, caller: Self.root, target: "alice") != .allowed)
        #expect(Authorization.decide(op, caller: Self.root, target: "root") == .allowed)
    }

    @Test(arguments: selfService)
    func user_mayActForOwnAccount(_ op: Operation) {
        #expect(Authorization.decide(op, caller: Self.alice, target: "alice") == .allowed)
    }

    @Test(arguments: selfService)
    func user_isRefusedForAnotherAccount(_ op: Operation) {
        #expect(Authorization.decide(op, caller: Self.alice, target: "bob") != .allowed)
        #expect(Authorization.decide(op, caller: Self.alice, target: "root") != .allowed)
    }

    @Test(arguments: selfService)
    func uidWithoutAccountName_isRefusedForAnyNamedAccount(_ op: Operation) {
        #expect(Authorization.decide(op, caller: Self.nameless, target: "alice") != .allowed)
    }

    @Test(arguments: [Operation.simulate, .lockoutReset, .importFprintd])
    func user_isRefusedAdministration(_ op: Operation) {
        #expect(Authorization.decide(op, caller: Self.alice, target: "alice") != .allowed)
        #expect(Authorization.decide(op, caller: Self.alice, target: nil) != .allowed)
    }

    @Test func user_mayListDevices() {
        #expect(Authorization.decide(.devices, caller: Self.alice, target: nil) == .allowed)
    }
}

@Suite struct DaemonOptionsTests {
    @Test func options_whenAllGiven_parsesThem() throws {
        let o = try DaemonOptions(arguments: [
            "--socket", "/tmp/s", "--state-dir", "/tmp/d", "--virtual-reader", "--linger-ms", "-1",
        ])
        #expect(o.socketPath == "/tmp/s")
        #expect(o.stateDirectory == "/tmp/d")
        #expect(o.virtualReader)
        #expect(o.lingerMsOverride == -1)
    }

    @Test(arguments: [
        (["--bogus"], DaemonOptions.ParseError.unknown("--bogus")),
        (["--socket"], .missingValue("--socket")),
        (["--socket", "relative"], .badValue("--socket", "relative")),
        (["--linger-ms", "soon"], .badValue("--linger-ms", "soon")),
    ])
    func options_whenBad_refusesWithReason(arguments: [String], expected: DaemonOptions.ParseError) {
        #expect(throws: expected) { try DaemonOptions(arguments: arguments) }
    }
}
