// SPDX-License-Identifier: Apache-2.0

/// How the fingerprint reader failed a request: the reader layer maps libfprint's errors to these
/// in one function (`readerError(consuming:)` in `FingerprintReader/Libfprint.swift`) and throws
/// them, so the daemon gets them typed and maps nothing. It travels with the daemon's typed answer
/// (`Decision.readerFailure`, `Answer.readerFailure`) so that a door tells its clients in its own
/// vocabulary (the fprintd door: "verify-disconnected", "enroll-data-full", …) by a `switch`, never
/// by reading the message.
/// Not on the socket's wire: there the failure is the RESULT's phrase.
public enum ReaderFailure: Error, Sendable, Equatable {
    /// No such reader, or none present.
    case noDevice
    /// The reader was unplugged.
    case removed
    /// The reader is busy.
    case busy
    case cancelled
    /// The stored print does not fit this reader.
    case dataInvalid
    /// The print is not on the reader.
    case dataNotFound
    /// The reader's storage is full.
    case dataFull
    /// The reader cannot do this.
    case notSupported
    /// The reader stopped talking sense (fprintd: "disconnected").
    case communication
    /// Anything else, with the reader's own message.
    case other(String)

    /// In a few lowercase words, for a RESULT's message or a policy input.
    public var english: String {
        switch self {
        case .noDevice: "no fingerprint reader is connected"
        case .removed: "the fingerprint reader was unplugged"
        case .busy: "the fingerprint reader is busy"
        case .cancelled: "cancelled"
        case .dataInvalid: "the stored print does not fit this reader"
        case .dataNotFound: "the print is not on the reader"
        case .dataFull: "the reader's storage is full"
        case .notSupported: "the reader cannot do this"
        case .communication: "the fingerprint reader stopped answering properly"
        case .other(let why): why
        }
    }
}
