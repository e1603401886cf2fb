// SPDX-License-Identifier: Apache-2.0
import LocalAuthDaemon
import LocalAuthSystemd

/// polkit's answer to `CheckAuthorization` (`(bba{ss})`).
struct PolkitAnswer: Equatable, Sendable {
    var isAuthorized: Bool
    var isChallenge: Bool
    var details: [String: String]

    /// polkitd adds `polkit.temporary_authorization_id` only when the subject authenticated (password
    /// typed in an authentication agent) for a `*_keep` action: right after the challenge, or while the
    /// kept authorization lasts (5 minutes, bound to the calling process: pid, start time and uid;
    /// polkit 122 `temporary_authorization_store_add_authorization`). An answer of `yes` never has it.
    var provesAuthentication: Bool {
        isAuthorized && !(details["polkit.temporary_authorization_id"] ?? "").isEmpty
    }

    /// Reads the reply's one `(bba{ss})` value; nil when it is anything else.
    init?(reply: [BusValue]) {
        guard reply.count == 1, case .structure(let members) = reply[0], members.count == 3,
            let authorized = members[0].boolValue, let challenge = members[1].boolValue,
            case .array(_, let entries) = members[2]
        else { return nil }
        var details: [String: String] = [:]
        for entry in entries {
            if case .dictEntry(let k, let v) = entry, let key = k.stringValue, let value = v.stringValue {
                details[key] = value
            }
        }
        self.init(isAuthorized: authorized, isChallenge: challenge, details: details)
    }

    init(isAuthorized: Bool, isChallenge: Bool, details: [String: String]) {
        self.isAuthorized = isAuthorized
        self.isChallenge = isChallenge
        self.details = details
    }
}

/// polkit's `CheckAuthorization` for a sender and an action: `Polkit` over the bus; an answer of
/// the test's in the door's in-process tests.
protocol PolkitAuthority: Sendable {
    func check(sender: String, action: String, completion: @escaping (Result<PolkitAnswer, BusError>) -> Void)
}

/// polkit's `org.freedesktop.PolicyKit1.Authority.CheckAuthorization`, asked over the door's bus
/// connection for a D-Bus sender (subject `system-bus-name`), as fprintd asks it.
struct Polkit: PolkitAuthority {
    static let destination = "org.freedesktop.PolicyKit1"
    static let path = "/org/freedesktop/PolicyKit1/Authority"
    static let interface = "org.freedesktop.PolicyKit1.Authority"
    /// `POLKIT_CHECK_AUTHORIZATION_FLAGS_ALLOW_USER_INTERACTION`: the agent may ask for a password.
    static let allowUserInteraction: UInt32 = 1
    /// A person may take a while to type a password into the dialog; fprintd waits without limit.
    static let timeoutUsec: UInt64 = 600_000_000

    let bus: BusConnection

    /// The arguments of `CheckAuthorization` for `sender` and `action`.
    static func arguments(sender: String, action: String) -> [BusValue] {
        let subject = BusValue.structure([
            .string("system-bus-name"),
            .array(element: "{sv}", [.dictEntry(.string("name"), .variant(.string(sender)))]),
        ])
        return [subject, .string(action), .array(element: "{ss}", []), .uint32(allowUserInteraction), .string("")]
    }

    /// Asks polkit whether `sender` may perform `action`; the completion runs on the bus queue with the
    /// answer, or the error that kept polkit from giving one (no polkitd: not authorised).
    func check(sender: String, action: String, completion: @escaping (Result<PolkitAnswer, BusError>) -> Void) {
        bus.call(
            destination: Self.destination, path: Self.path, interface: Self.interface, member: "CheckAuthorization",
            Self.arguments(sender: sender, action: action), timeoutUsec: Self.timeoutUsec
        ) { result in
            switch result {
            case .failure(let error): completion(.failure(error))
            case .success(let reply):
                guard let answer = PolkitAnswer(reply: reply) else {
                    completion(
                        .failure(BusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "bad polkit answer"))
                    )
                    return
                }
                completion(.success(answer))
            }
        }
    }
}
