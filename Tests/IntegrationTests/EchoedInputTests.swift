// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthProtocol
import LocalAuthTesting
import Testing

/// Issue 13, H2: a client string the daemon repeats in a reply (a user name in "Not allowed…", a
/// finger name, a reason, a cancel title) of about 1000 bytes made `Frame.encoded()` trap, and the
/// daemon died (SIGILL, exit 132) on one request from any user. Every such request is now
/// answered, and the daemon serves on.
@Suite(.onOwnThreads, .timeLimit(.minutes(4)))
struct EchoedInputTests {
    /// The variants the red team found, and the ones found beside them: one request after HELLO,
    /// from an ordinary uid.
    enum Variant: String, CaseIterable, CustomTestStringConvertible {
        case statusOfAnotherUser, canEvaluateForAnotherUser, evaluateForAnotherUser, listOfAnotherUser
        case enrollOfABadFinger, deleteOfABadFinger, evaluateWithALongReason, evaluateWithALongCancelTitle
        var testDescription: String { rawValue }

        var needsAFinger: Bool { self == .evaluateWithALongReason || self == .evaluateWithALongCancelTitle }

        var frame: Frame {
            let long = String(repeating: "a", count: 1000)
            func with(_ type: MessageType, _ fields: [(FieldTag, String)], policy: Bool = false) -> Frame {
                var f = Frame(type)
                if policy { f.append(.policy, int: PolicyKind.deviceOwnerAuthenticationWithBiometrics.rawValue) }
                for (tag, value) in fields { f.append(tag, string: value) }
                if type == .evaluate { f.append(.timeoutMs, int: 1000) }
                return f
            }
            switch self {
            case .statusOfAnotherUser: return with(.status, [(.user, long)])
            case .canEvaluateForAnotherUser: return with(.canEvaluate, [(.user, long)], policy: true)
            case .evaluateForAnotherUser: return with(.evaluate, [(.user, long)], policy: true)
            case .listOfAnotherUser: return with(.list, [(.user, long)])
            case .enrollOfABadFinger: return with(.enroll, [(.finger, long)])
            case .deleteOfABadFinger: return with(.delete, [(.finger, long)])
            case .evaluateWithALongReason: return with(.evaluate, [(.reason, long)], policy: true)
            case .evaluateWithALongCancelTitle: return with(.evaluate, [(.cancelTitle, long)], policy: true)
            }
        }
    }

    @Test(arguments: Variant.allCases)
    func echoedString_ofAThousandBytes_isAnsweredAndTheDaemonServesOn(_ variant: Variant) async throws {
        let d = try DaemonHarness()
        if variant.needsAFinger { try await d.enroll(user: "nobody", printID: "nobody-1") }
        let reply = try Self.send(variant.frame, as: "65534", to: d)
        #expect(reply.contains { $0.type == .result }, "\(variant): no RESULT; the daemon said:\n\(d.daemonLog)")
        #expect(d.process?.isRunning == true, "\(variant) stopped the daemon:\n\(d.daemonLog)")
        let (devices, _) = try d.perform(.devices)
        #expect(devices.isSuccess)
    }

    /// The client side of the same: a name longer than a field can carry is a clear error from
    /// `localauthctl`, not a trap (SIGILL) in it.
    @Test func ctl_whenAUserNameIsLongerThanAFieldAllows_failsWithAMessage() throws {
        let d = try DaemonHarness()
        let r = try d.ctl(["status", "--user", String(repeating: "a", count: 2000)], asUser: "65534")
        // Before, the CLI died of SIGILL (which Process also reports as 4) and said nothing.
        #expect(r.status == 4 && r.err.contains("too large to send"), "\(r.status): \(r.err)")
        let (devices, _) = try d.perform(.devices)
        #expect(devices.isSuccess)
    }

    /// Every request kind, every string field as long as the frame allows (ASCII, two-byte
    /// characters, control characters), from root and from an ordinary uid, through the real
    /// daemon: each gets a RESULT, and the daemon is still there after all of them.
    @Test func everyRequestKind_withMaximalStringFields_isAnsweredAndTheDaemonServesOn() async throws {
        let d = try DaemonHarness()
        try await d.enroll(user: "nobody", printID: "nobody-1")
        for (i, frame) in Self.maximalFrames().enumerated() {
            for uid in ["0", "65534"] {
                let reply = try Self.send(frame, as: uid, to: d)
                #expect(
                    reply.contains { $0.type == .result || $0.type == .error },
                    "\(frame.type) #\(i) as uid \(uid): no answer\n\(d.daemonLog)")
                try #require(d.process?.isRunning == true, "\(frame.type) #\(i) as uid \(uid) stopped the daemon")
            }
        }
        let (devices, _) = try d.perform(.devices)
        #expect(devices.isSuccess)
    }

    /// One frame per request kind and text shape, its string fields filling the body limit.
    static func maximalFrames() -> [Frame] {
        let shapes: [Character] = ["a", "é", "\n"]
        let kinds: [(MessageType, [FieldTag])] = [
            (.status, [.user]), (.canEvaluate, [.user]), (.list, [.user]), (.lockoutReset, [.user]),
            (.passwordUsed, [.user, .service]),
            (.enroll, [.user, .finger]), (.delete, [.user, .finger]), (.simulate, [.action, .argument]),
            (.passcodeSet, [.user, .passcode, .oldPasscode]), (.passcodeRemove, [.user, .oldPasscode]),
            (.evaluate, [.service, .tty, .reason, .fallbackTitle, .cancelTitle]),
            (.evaluate, [.user, .service, .tty, .reason]),
        ]
        var out: [Frame] = []
        for (type, tags) in kinds {
            for shape in shapes {
                var f = Frame(type)
                if type == .canEvaluate || type == .evaluate {
                    f.append(.policy, int: PolicyKind.deviceOwnerAuthentication.rawValue)
                }
                if type == .evaluate {
                    f.append(.timeoutMs, int: 1000)
                    f.append(.flags, int: RequestFlags.passcodeCapable.rawValue)
                }
                let fixed = 2 + f.fields.count * 12
                let each = min(Wire.maxFieldSize, (Wire.maxBodySize - fixed) / tags.count - 4)
                for tag in tags {
                    let text = String(repeating: shape, count: each / shape.utf8.count)
                    f.append(tag, string: text)
                }
                out.append(f)
            }
        }
        return out
    }

    /// HELLO and `frame` on a fresh connection made as `uid`; the frames that came back up to the
    /// first RESULT or ERROR.
    static func send(_ frame: Frame, as uid: String, to d: DaemonHarness) throws -> [Frame] {
        let bytes = Hello(client: "echo").frame.encoded() + frame.encoded()
        return try frames(in: try AuthorizationMatrixTests.relay(bytes, uid: uid, socket: d.socketPath))
    }
}
