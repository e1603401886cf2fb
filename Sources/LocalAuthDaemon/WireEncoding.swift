// SPDX-License-Identifier: Apache-2.0
// The core's typed answers in the wire's words: the one place a `Notice` becomes an EVENT and a
// `Decision` a RESULT, and a `Phrase` goes out twice: rendered in English (`message`, for old clients) and as itself
// (`phrase`, which each client renders in its own language).

import LocalAuthCore
import LocalAuthProtocol

extension Notice {
    var event: Event {
        Event(
            kind, phrase.english, triesLeft: triesLeft.map(Int64.init), delayMs: delayMs, hint: hint,
            finger: finger?.rawValue, phrase: phrase)
    }
}

extension Decision {
    var result: RequestResult {
        var extra = Frame(.result)
        if let biometryType { extra.append(.biometryType, int: biometryType.rawValue) }
        if let domainState { extra.append(.domainState, bytes: domainState) }
        extra.append(.finger, optionalString: finger?.rawValue)
        if let biometryLocked { extra.append(.biometryLocked, bool: biometryLocked) }
        if let passcodeSet { extra.append(.passcodeSet, bool: passcodeSet) }
        return RequestResult(
            code, phrase.english, extra: extra.fields, phrase: phrase, readerFailure: readerFailure)
    }
}
