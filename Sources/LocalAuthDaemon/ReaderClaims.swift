// SPDX-License-Identifier: Apache-2.0
import FingerprintReader
import LocalAuthProtocol
import LocalAuthStore

/// A door's claim on one reader for one account, and its release (fprintd's Claim and Release): the
/// reader stays open from the claim to the release, as fprintd opens it on Claim. Requests of their
/// own, with rows in the authorisation table (`Operation.claimReader`, `.releaseReader`: the caller's
/// own account, root any) and audit records (`op=claimReader`, `op=releaseReader`, with the door's
/// `via=`); the door holds no reader and decides no account rule itself.
extension Daemon {
    /// Claims the reader `door.readerID` for `user`, and holds it open when `hold` (a door that holds
    /// it already from an earlier claim does not hold it twice). A refusal or a reader that cannot be
    /// opened answers with the reason (`readerFailure`).
    public func claimReader(user: String, caller: PeerCredentials, door: DoorContext, hold: Bool) async
        -> Answer
    {
        let fields = Self.claimFields(door)
        if case .refused(let why) = Authorization.decide(.claimReader, caller: caller, target: user) {
            parts.audit.decision(
                .claimReader, user: user, caller: caller, result: .notAuthorized, detail: why, fields: fields)
            return Answer(.notAuthorized, Phrase.said("Not allowed: %s", .verbatim(why)))
        }
        guard EnrollmentStore.isValidUserName(user) else {
            return Answer(
                .invalidRequest, Phrase.said("%s is not a valid user name", .verbatim(Echo.quoted(user))))
        }
        // English: the door and the audit record read it; no client is shown a claim's answer.
        var result = Answer(.success, english: "Reader claimed")
        if hold, let reader = parts.reader, let id = door.readerID {
            do throws(ReaderFailure) { try await reader.hold(deviceID: id) } catch { result = error.answer }
        }
        parts.audit.decision(
            .claimReader, user: user, caller: caller, result: result.code,
            detail: result.english, fields: fields)
        return result
    }

    /// Ends a claim: lets the reader close when `close` (after the operations queued before, with the
    /// close's failure as the answer, as fprintd's Release answers), else only gives up the hold.
    public func releaseReader(user: String, caller: PeerCredentials, door: DoorContext, close: Bool) async
        -> Answer
    {
        // English: the door and the audit record read it; no client is shown a release's answer.
        var result = Answer(.success, english: "Reader released")
        if close, let reader = parts.reader, let id = door.readerID {
            do throws(ReaderFailure) { try await reader.releaseHoldAndClose(deviceID: id) } catch {
                result = error.answer
            }
        }
        parts.audit.decision(
            .releaseReader, user: user, caller: caller, result: result.code,
            detail: result.english, fields: Self.claimFields(door))
        return result
    }

    /// A claim that ends without closing the reader (its claimer left the bus, the reader was
    /// unplugged, a Release that waited for a running request): the hold is given up at once, in the
    /// caller's order (the reader closes after its linger time), and audited.
    public nonisolated func abandonReader(user: String, caller: PeerCredentials, door: DoorContext) {
        if let reader = parts.reader, let id = door.readerID { reader.releaseHold(deviceID: id) }
        parts.audit.decision(
            .releaseReader, user: user, caller: caller, result: .success,
            detail: "Claim ended; the reader is not closed at once",
            fields: Self.claimFields(door))
    }

    private static func claimFields(_ door: DoorContext) -> [(String, String)] {
        [("reader", door.readerID ?? "-"), ("via", door.name ?? "-")]
    }
}

extension Daemon {
    /// The authorisation table asked ahead, for a door that must know before its own checks (the
    /// fprintd door before polkit, so that no password dialog goes up for a call the daemon would
    /// refuse): nil when allowed; else the refusal, audited as `handle` audits it.
    public nonisolated func refusal(_ operation: Operation, caller: PeerCredentials, target: String, door: DoorContext)
        -> Answer?
    {
        guard case .refused(let why) = Authorization.decide(operation, caller: caller, target: target) else {
            return nil
        }
        parts.audit.decision(
            operation, user: target, caller: caller, result: .notAuthorized, detail: why,
            fields: door.name.map { [("via", $0)] } ?? [])
        return Answer(.notAuthorized, Phrase.said("Not allowed: %s", .verbatim(why)))
    }
}
