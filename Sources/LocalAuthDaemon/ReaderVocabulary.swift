// SPDX-License-Identifier: Apache-2.0
// The reader layer's words in the protocol's words: retry hints, finger numbers, failures.

import FingerprintReader
import LocalAuthCore
import LocalAuthProtocol

extension RetryHint {
    init(_ retry: ReaderRetry) {
        switch retry {
        case .general: self = .general
        case .tooShort: self = .tooShort
        case .centerFinger: self = .centerFinger
        case .removeFinger: self = .removeFinger
        }
    }
}

extension FingerName {
    /// libfprint's `FpFinger` value: left thumb 1 … right little 10.
    public var fingerNumber: Int { FingerName.allCases.firstIndex(of: self)! + 1 }
}

extension ReaderFailure {
    /// The reader layer's error in the daemon's words: the one place a `ReaderError` (libfprint's,
    /// mapped once in `FingerprintReader`) becomes the failure an answer carries to its door.
    init(_ error: Error) {
        guard let e = error as? ReaderError else {
            self = .other("\(error)")
            return
        }
        switch e {
        case .noDevice: self = .noDevice
        case .removed: self = .removed
        case .busy: self = .busy
        case .cancelled: self = .cancelled
        case .dataInvalid: self = .dataInvalid
        case .dataNotFound: self = .dataNotFound
        case .dataFull: self = .dataFull
        case .notSupported: self = .notSupported
        case .communication: self = .communication
        case .failed(let why): self = .other(why)
        }
    }

    /// The answer to a request the reader could not serve: the evaluation's phrase for it, which
    /// each client renders in its language (the failure's own words stay English).
    var answer: Answer {
        Answer(Decision(.biometryNotAvailable, .readerFailed(english), readerFailure: self))
    }
}
