// SPDX-License-Identifier: Apache-2.0
// The reader layer's words in the protocol's words: finger numbers, failures.

import FingerprintReader
import LocalAuthCore
import LocalAuthProtocol

extension FingerName {
    /// libfprint's `FpFinger` value: left thumb 1 … right little 10.
    public var fingerNumber: Int { FingerName.allCases.firstIndex(of: self)! + 1 }
}

extension ReaderFailure {
    /// What a reader call threw, as the failure an answer carries to its door: the reader layer
    /// throws `ReaderFailure`s (libfprint's errors mapped once, in `FingerprintReader`); anything
    /// else is `.other`.
    init(_ error: Error) {
        self = error as? ReaderFailure ?? .other("\(error)")
    }

    /// The answer to a request the reader could not serve: the evaluation's phrase for it, which
    /// each client renders in its language (the failure's own words stay English).
    var answer: Answer {
        Answer(Decision(.biometryNotAvailable, .readerFailed(english), readerFailure: self))
    }
}
