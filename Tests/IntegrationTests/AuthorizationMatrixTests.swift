// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthProtocol
import LocalAuthTesting
import Testing

/// The authorisation table of `docs/security.md`, every operation × every kind of caller, through
/// the real daemon with callers that are real uids (`setpriv`): the account acted on is `nobody`'s
/// (uid 65534); `daemon` (uid 1) is another user; uid 4242 has no account name; the liar is uid 1
/// speaking the protocol itself, whose HELLO and request both claim to be `nobody`. canEvaluate
/// has no `localauthctl` command, and `localauthctl right` names no other account for a secret or
/// a signature, so every caller sends those and the other RIGHT_* requests through the same relay.
///
/// An allowed cell must do what was asked (and is checked for its effect); a refused cell must
/// answer `notAuthorized` and change nothing.
@Suite(.onOwnThreads, .timeLimit(.minutes(4)))
struct AuthorizationMatrixTests {
    static let owner = "nobody"
    static let passcode = "owner passcode"

    enum Caller: String, CaseIterable, CustomTestStringConvertible {
        case root, theUserThemself, anotherUser, uidWithoutAName, liar
        var testDescription: String { rawValue }
        /// The uid `localauthctl` runs as (nil: root).
        var uid: String? {
            switch self {
            case .root: nil
            case .theUserThemself: "65534"
            case .anotherUser, .liar: "1"
            case .uidWithoutAName: "4242"
            }
        }
    }

    enum Op: String, CaseIterable {
        case status, canEvaluate, devices, evaluate, verify, list, enroll, delete
        case passcodeSet, passcodeChange, passcodeRemove, lockoutReset, simulate
        case rightSave, rightGet, rightUse, rightRemove
        var isRight: Bool { [.rightSave, .rightGet, .rightUse, .rightRemove].contains(self) }
    }

    /// The owner's right every RIGHT_* cell aims at, and the one a caller tries to plant.
    static let right = "vault"
    static let planted = "planted"
    static let rightSecret: [UInt8] = Array("the owner's secret".utf8)

    /// `docs/security.md`'s table, for the account `nobody`.
    static func allowed(_ op: Op, _ caller: Caller) -> Bool {
        switch caller {
        case .root: return op != .rightSave && op != .rightGet && op != .rightUse  // removes, never reads
        case .theUserThemself: return op != .lockoutReset && op != .simulate
        case .anotherUser, .uidWithoutAName, .liar: return op == .devices
        }
    }

    /// The request an operation sends, for the liar's hand-made frames.
    static func request(_ op: Op) -> Request {
        switch op {
        case .status: .status(user: owner)
        case .canEvaluate: .canEvaluate(policy: .deviceOwnerAuthenticationWithBiometrics, user: owner)
        case .devices: .devices
        case .evaluate:
            .evaluate(EvaluateOptions(policy: .deviceOwnerAuthentication, user: owner, flags: [.passcodeCapable]))
        case .verify: .evaluate(EvaluateOptions(policy: .deviceOwnerAuthenticationWithBiometrics, user: owner))
        case .list: .list(user: owner)
        case .enroll: .enroll(user: owner, finger: .leftIndex)
        case .delete: .delete(user: owner, finger: .rightIndex, all: false)
        case .passcodeSet: .passcodeSet(user: owner, passcode: "liar's passcode", oldPasscode: nil)
        case .passcodeChange: .passcodeSet(user: owner, passcode: "liar's passcode", oldPasscode: passcode)
        case .passcodeRemove: .passcodeRemove(user: owner, oldPasscode: passcode)
        case .lockoutReset: .lockoutReset(user: owner)
        case .simulate: .simulate(action: "finger-off", argument: nil)
        case .rightSave:
            .rightSave(user: owner, identifier: planted, requirement: .biometryAny, secret: Array("planted".utf8))
        case .rightGet: .rightGet(user: owner, identifier: right)
        case .rightUse:
            .rightUse(
                RightUseOptions(
                    user: owner, identifier: right, operation: .loadSecret, prompt: PromptOptions(timeoutMs: 10_000)))
        case .rightRemove: .rightRemove(user: owner, identifier: right)
        }
    }

    /// What the owner's account looks like, as root sees it.
    struct Snapshot: Equatable {
        var fingers: [String]
        var passcodeSet: Bool
        var locked: Bool
        /// Which of `right` and `planted` the owner holds (read for the RIGHT_* cells only).
        var rights: [String] = []
    }

    static func snapshot(_ d: DaemonHarness, rights: Bool = false) throws -> Snapshot {
        let (list, _) = try d.perform(.list(user: owner))
        let (status, _) = try d.perform(.status(user: owner))
        return Snapshot(
            fingers: list.fields.strings(.finger).sorted(), passcodeSet: status.fields.bool(.passcodeSet) == true,
            locked: status.fields.bool(.biometryLocked) == true,
            rights: rights ? try [right, planted].filter { try ownerHolds($0, d) } : [])
    }

    /// Whether the owner holds the right, asked as the owner (root may not read it).
    static func ownerHolds(_ identifier: String, _ d: DaemonHarness) throws -> Bool {
        let get = Request.rightGet(user: nil, identifier: identifier)
        let reply = try relay(
            Hello(client: "matrix").frame.encoded() + get.frame.encoded(), uid: "65534", socket: d.socketPath)
        let result = try frames(in: reply).first { $0.type == .result }.map { try RequestResult(frame: $0) }
        return result?.isSuccess == true
    }

    static func rootSetsPasscode(_ d: DaemonHarness) throws {
        let (r, _) = try d.perform(.passcodeSet(user: owner, passcode: passcode, oldPasscode: nil))
        #expect(r.isSuccess, "\(r.message)")
    }

    /// Runs one cell; returns the result code the caller saw (`notAuthorized` for exit status 3).
    static func run(_ op: Op, as caller: Caller, on d: DaemonHarness, expectAllowed: Bool) throws -> ResultCode? {
        if op == .rightUse && expectAllowed { try d.simulate("touch", "owner-1") }
        if caller == .liar || op == .canEvaluate || op.isRight { return try viaRelay(op, as: caller, on: d) }
        let user = ["--user", owner]
        var arguments: [String]
        var stdin: String? = nil
        let oldPasscode = caller == .root ? "" : passcode + "\n"
        switch op {
        case .status: arguments = ["status"] + user
        case .canEvaluate: return nil  // no localauthctl command: sent through the relay above
        case .devices: arguments = ["devices"]
        case .evaluate, .verify:
            // The finger is laid on the reader only when the cell is meant to go ahead, so a refused
            // request leaves no touch queued for the next one; a wrongly allowed one times out.
            if expectAllowed { try d.simulate("touch", "owner-1") }
            arguments = ["verify", "--timeout", "10"] + user + (op == .evaluate ? ["--passcode"] : [])
        case .list: arguments = ["list"] + user
        case .enroll:
            if expectAllowed {
                if caller != .root { try d.simulate("touch", "owner-1") }  // the proof of presence
                for _ in 0..<5 { try d.simulate("touch", "owner-2") }
            }
            arguments = ["enroll", "--finger", "left-index-finger"] + user
        case .delete: arguments = ["delete", "--finger", "left-index-finger"] + user
        case .passcodeSet:
            // A first passcode: the user proves it is them with their enrolled finger (issue 13, C1).
            if expectAllowed && caller != .root { try d.simulate("touch", "owner-1") }
            arguments = ["passcode", "set"] + user
            stdin = "a new passcode\n"
        case .passcodeChange:
            arguments = ["passcode", "change"] + user
            stdin = oldPasscode + "a changed passcode\n"
        case .passcodeRemove:
            arguments = ["passcode", "remove"] + user
            stdin = oldPasscode
        case .lockoutReset: arguments = ["lockout", "reset"] + user
        case .simulate: arguments = ["simulate", "finger-off"]
        case .rightSave, .rightGet, .rightUse, .rightRemove: return nil  // sent through the relay above
        }
        let r = try d.ctl(arguments, asUser: caller.uid, stdin: stdin)
        switch r.status {
        case 0: return .success
        case 3:
            #expect(r.err.contains("notAuthorized"), "\(op) as \(caller): \(r.err)")
            return .notAuthorized
        default:
            Issue.record("\(op) as \(caller): exit \(r.status): \(r.out) \(r.err)")
            return nil
        }
    }

    /// Hand-made frames through a relay running as the caller's uid: for the liar (uid 1, whose
    /// HELLO and request both claim `nobody`), and for canEvaluate, which `localauthctl` lacks.
    static func viaRelay(_ op: Op, as caller: Caller, on d: DaemonHarness) throws -> ResultCode? {
        let hello = Hello(client: caller == .liar ? owner : "matrix")
        let bytes = hello.frame.encoded() + request(op).frame.encoded()
        let reply = try relay(bytes, uid: caller.uid ?? "0", socket: d.socketPath)
        for frame in try frames(in: reply) where frame.type == .result {
            let result = try RequestResult(frame: frame)
            if op == .rightUse {
                // The secret reaches the owner alone, and only in a request that succeeded.
                let data = result.fields.bytes(.data)
                #expect(data == (result.isSuccess ? rightSecret : nil), "\(op) as \(caller): \(result.message)")
            }
            return result.resultCode
        }
        Issue.record("\(op) as \(caller): no RESULT in \(reply.count) bytes")
        return nil
    }

    /// Sends `bytes` on a fresh connection made as `uid`, and returns what came back up to the
    /// first RESULT or ERROR frame (or the daemon closing).
    static func relay(_ bytes: [UInt8], uid: String, socket: String) throws -> [UInt8] {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        p.arguments = [
            "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "/usr/bin/python3", "-c", FrameRelay.script, socket,
            "", "",
        ]
        let input = Pipe()
        let output = Pipe()
        p.standardInput = input
        p.standardOutput = output
        try p.run()
        input.fileHandleForWriting.write(Data(bytes))
        try input.fileHandleForWriting.close()
        let reply = output.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return Array(reply)
    }

    /// Puts the account in the state the cell needs, as root.
    static func prepare(_ op: Op, _ d: DaemonHarness) async throws {
        var s = try snapshot(d, rights: op.isRight)
        if !s.fingers.contains("right-index-finger") {
            try await d.enroll(user: owner, finger: .rightIndex, printID: "owner-1")
        }
        if op.isRight && !s.rights.contains(right) {
            // Saved by the owner (root may not save into another account).
            let save = Request.rightSave(user: nil, identifier: right, requirement: .biometryAny, secret: rightSecret)
            _ = try relay(
                Hello(client: "matrix").frame.encoded() + save.frame.encoded(), uid: "65534", socket: d.socketPath)
        }
        if s.rights.contains(planted) { _ = try d.perform(.rightRemove(user: owner, identifier: planted)) }
        switch op {
        case .enroll:
            if s.fingers.contains("left-index-finger") {
                _ = try d.perform(.delete(user: owner, finger: .leftIndex, all: false))
            }
        case .delete:
            if !s.fingers.contains("left-index-finger") {
                try await d.enroll(user: owner, finger: .leftIndex, printID: "owner-2")
            }
        case .passcodeSet:
            if s.passcodeSet { _ = try d.perform(.passcodeRemove(user: owner, oldPasscode: nil)) }
        case .lockoutReset:
            // Five misses lock biometrics (verified below through the snapshot).
            for _ in 0..<5 {
                try d.simulate("touch", "mallory")
                _ = try d.perform(
                    .evaluate(
                        EvaluateOptions(
                            policy: .deviceOwnerAuthenticationWithBiometrics, user: owner, tries: 1, timeoutMs: 10_000))
                )
            }
        default:
            break
        }
        s = try snapshot(d, rights: op.isRight)
        if op.isRight { #expect(s.rights == [right], "prepared for \(op): \(s.rights)") }
        if op != .passcodeSet { try rootSetsPasscode(d) }  // a known passcode (a cell may have changed it)
        if op != .lockoutReset && s.locked { _ = try d.perform(.lockoutReset(user: owner)) }
    }

    /// The effect an allowed cell must have had, compared with the account before it.
    static func checkEffect(_ op: Op, before: Snapshot, after: Snapshot, caller: Caller) {
        let context = "\(op) as \(caller)"
        switch op {
        case .enroll: #expect(after.fingers == (before.fingers + ["left-index-finger"]).sorted(), "\(context)")
        case .delete: #expect(after.fingers == before.fingers.filter { $0 != "left-index-finger" }, "\(context)")
        case .passcodeSet: #expect(!before.passcodeSet && after.passcodeSet, "\(context)")
        case .passcodeRemove: #expect(before.passcodeSet && !after.passcodeSet, "\(context)")
        case .lockoutReset: #expect(before.locked && !after.locked, "\(context)")
        case .rightSave: #expect(before.rights == [right] && after.rights == [right, planted], "\(context)")
        case .rightRemove: #expect(before.rights == [right] && after.rights.isEmpty, "\(context)")
        default: #expect(after == before, "\(context)")
        }
    }

    @Test(arguments: Caller.allCases)
    func everyOperation_isAllowedOrRefusedAsTheSecurityTableSays(_ caller: Caller) async throws {
        let d = try DaemonHarness(extraArguments: ["--linger-ms", "-1"])
        for op in Op.allCases {
            try await Self.prepare(op, d)
            let before = try Self.snapshot(d, rights: op.isRight)
            let expectAllowed = Self.allowed(op, caller)
            let code = try Self.run(op, as: caller, on: d, expectAllowed: expectAllowed)
            let after = try Self.snapshot(d, rights: op.isRight)
            if expectAllowed {
                #expect(code == .success, "\(op) as \(caller) must be allowed\n\(d.daemonLog)")
                Self.checkEffect(op, before: before, after: after, caller: caller)
            } else {
                #expect(code == .notAuthorized, "\(op) as \(caller) must be refused")
                #expect(after == before, "\(op) as \(caller) was refused but changed the account")
            }
            if op == .passcodeChange && expectAllowed {
                // The new passcode is the one that now opens the account.
                let r = try d.ctl(
                    ["passcode", "remove", "--user", Self.owner], asUser: "65534", stdin: "a changed passcode\n")
                #expect(r.status == 0, "after \(op) as \(caller) the new passcode must hold: \(r.err)")
            }
        }
    }
}
