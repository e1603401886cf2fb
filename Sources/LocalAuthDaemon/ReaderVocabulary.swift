// SPDX-License-Identifier: Apache-2.0
// The reader layer's words in the protocol's words: retry hints, finger numbers, failures.

import FingerprintReader
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
    var fingerNumber: Int { FingerName.allCases.firstIndex(of: self)! + 1 }
}

extension ReaderError {
    /// In a few lowercase words, for a RESULT's message or a policy input.
    static func describe(_ error: Error) -> String {
        guard let e = error as? ReaderError else { return "\(error)" }
        switch e {
        case .noDevice: return "no fingerprint reader is connected"
        case .removed: return "the fingerprint reader was unplugged"
        case .busy: return "the fingerprint reader is busy"
        case .cancelled: return "cancelled"
        case .dataInvalid: return "the stored print does not fit this reader"
        case .dataNotFound: return "the print is not on the reader"
        case .dataFull: return "the reader's storage is full"
        case .notSupported: return "the reader cannot do this"
        case .communication: return "the fingerprint reader stopped answering properly"
        case .failed(let why): return why
        }
    }

    /// The message of a request the reader could not serve.
    static func failureMessage(_ error: Error) -> String {
        "The fingerprint reader failed: \(describe(error))"
    }
}
