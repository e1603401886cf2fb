// SPDX-License-Identifier: Apache-2.0
// The daemon's typed answer in the socket's words: the one place an `Answer` becomes a RESULT frame,
// and its `Phrase` goes out twice: rendered in English (`message`, for old clients) and as itself
// (`phrase`, which each client renders in its own language). The fields keep the order the daemon
// wrote them in before the answer was typed (issue 28): the decision's, then the payload's.

import LocalAuthCore
import LocalAuthDaemon
import LocalAuthProtocol

extension Answer {
    /// The RESULT this answer is on the socket.
    public var result: RequestResult {
        var extra = Frame(.result)
        let d = decision
        if let biometryType = d.biometryType { extra.append(.biometryType, int: biometryType.rawValue) }
        if let domainState = d.domainState { extra.append(.domainState, bytes: domainState) }
        extra.append(.finger, optionalString: d.finger?.rawValue)
        if let biometryLocked = d.biometryLocked { extra.append(.biometryLocked, bool: biometryLocked) }
        if let passcodeSet = d.passcodeSet { extra.append(.passcodeSet, bool: passcodeSet) }
        switch payload {
        case .none: break
        case .fingers(let fingers): for finger in fingers { extra.append(.finger, string: finger.rawValue) }
        case .devices(let devices): extra.fields.append(contentsOf: devices.map(\.field))
        case .status(let facts): Self.append(facts, to: &extra)
        case .enrolled(let finger, let domainState):
            extra.append(.finger, string: finger.rawValue)
            extra.append(.domainState, bytes: domainState)
        case .domainState(let domainState): extra.append(.domainState, bytes: domainState)
        case .sensorInaccessible: extra.append(.sensorInaccessible, bool: true)
        case .right(let requirement, let publicKey):
            extra.append(.requirement, int: requirement.rawValue)
            if let publicKey { extra.append(.publicKey, bytes: publicKey) }
        case .data(let data): extra.append(.data, bytes: data)
        }
        return RequestResult(code, english, extra: extra.fields, phrase: phrase)
    }

    /// STATUS's fields: the reader, then the account's, then the rules' (`passwordRule`,
    /// `passwordReason` with its phrase, `fingerUntilMs`).
    static func append(_ facts: StatusFacts, to extra: inout Frame) {
        extra.append(.readerPresent, bool: facts.readerPresent)
        extra.append(.biometryType, int: facts.biometryType.rawValue)
        guard let account = facts.account else { return }
        extra.append(.enrolledCount, int: Int64(account.enrolledCount))
        extra.append(.biometryLocked, bool: account.biometryLocked)
        extra.append(.passcodeSet, bool: account.passcodeSet)
        switch account.password {
        case .notEnforced:
            extra.append(.passwordRule, int: 0)
        case .required(let reason):
            extra.append(.passwordRule, int: 2)
            extra.append(.passwordReason, string: reason.message)
            // The same reason as a phrase, for the client's language (docs/protocol.md, "Phrases").
            if let value = Phrase.passwordRequired(reason).wireValue {
                extra.append(.passwordReasonPhrase, bytes: value)
            }
        case .notRequired(let forMs):
            extra.append(.passwordRule, int: 1)
            if let forMs { extra.append(.fingerUntilMs, int: account.askedAtMs &+ forMs) }
        }
    }
}
