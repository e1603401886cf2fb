// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// Where a caller asks from, found ahead of the evaluation it is for: the fprintd door starts it
/// when a VerifyStart is admitted and asks polkit meanwhile, so that logind's round trip and
/// polkit's run together instead of one after the other (issue 29). Only the facts are gathered
/// early (`Whereabouts.find`: the caller's session, seat and terminal; nothing of the account, no
/// count, no audit); the presence rule still decides when the evaluation runs, after polkit has
/// allowed the call, and a lookup polkit's refusal leaves unused is dropped.
///
/// It serves one evaluation only, and only for the caller, account and service it was started for
/// (`take`): a second evaluation of the same request (fprintd's verify starting again after a
/// timeout) finds where the caller is afresh.
public final class PresenceLookup: Sendable, Equatable {
    let caller: PeerCredentials
    let target: String
    let service: String?
    private let found: Mutex<Task<Whereabouts, Never>?>

    init(caller: PeerCredentials, target: String, service: String?, parts: DaemonParts) {
        self.caller = caller
        self.target = target
        self.service = service
        found = Mutex(
            Task {
                await Whereabouts.find(caller: caller, target: target, tty: nil, service: service, parts: parts)
            })
    }

    /// The lookup, once, when it was started for exactly this question (no terminal and no right
    /// named: the door's verifications); nil otherwise, and from the second time on.
    func take(caller: PeerCredentials, target: String, tty: String?, service: String?, right: String?) -> Task<
        Whereabouts, Never
    >? {
        guard tty == nil, right == nil, caller == self.caller, target == self.target, service == self.service else {
            return nil
        }
        return found.withLock { task in
            defer { task = nil }
            return task
        }
    }

    public static func == (a: PresenceLookup, b: PresenceLookup) -> Bool { a === b }
}

extension Daemon {
    /// Starts finding where `caller` asks from for an evaluation of `user`'s account named as
    /// `service`; hand it to the evaluation in `DoorContext.presenceLookup`.
    public nonisolated func lookUpPresence(caller: PeerCredentials, user: String, service: String?) -> PresenceLookup {
        PresenceLookup(caller: caller, target: user, service: service, parts: parts)
    }
}
