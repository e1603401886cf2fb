// SPDX-License-Identifier: Apache-2.0

import LocalAuthCore
import LocalAuthProtocol
import Testing

/// Rows W of docs/policy.md: who may be asked for a finger (`Presence.decide`), decided before
/// anything about the target account is read.
@Suite struct PresenceTests {
    static func session(
        _ owner: String?, _ sessionClass: String = "user", seat: String? = "seat0", active: Bool = true,
        remote: Bool = false
    ) -> SessionFacts {
        SessionFacts(owner: owner, sessionClass: sessionClass, seat: seat, isActive: active, isRemote: remote)
    }

    /// A process of `user` (uid 1000), in `session`.
    static func user(_ name: String = "alice", in session: SessionFacts?) -> RequestOrigin {
        RequestOrigin(uid: 1000, name: name, realUID: 1000, realName: name, session: session)
    }

    /// A setuid-root program (su, sudo, polkit's helper) started by `invoker`.
    static func setuid(by invoker: String, in session: SessionFacts?) -> RequestOrigin {
        RequestOrigin(uid: 0, name: "root", realUID: 1001, realName: invoker, session: session)
    }

    /// A process whose real uid is 0 too (login, a greeter's worker, root's own tools).
    static func root(in session: SessionFacts?, vt: Bool = false, logind: Bool = true) -> RequestOrigin {
        RequestOrigin(
            uid: 0, name: "root", realUID: 0, realName: "root", session: session, logindPresent: logind,
            onForegroundVT: vt)
    }

    @Test func presence_usersOwnRequestFromTheirActiveLocalSession_isOffered() {
        #expect(Presence.decide(Self.user(in: Self.session("alice")), target: "alice") == .offered(requester: "alice"))
    }

    @Test func presence_setuidCallerStartedByAnotherUser_isRefused() {
        // su alice, run by bob: a touch would answer alice's finger for bob.
        let verdict = Presence.decide(Self.setuid(by: "bob", in: Self.session("bob")), target: "alice")
        #expect(verdict == .refused(.notTheTargetsSession("alice")))
        #expect(
            Phrase.fingerNotAvailable(.notTheTargetsSession("alice")).english
                == "Fingerprint not available: the request is not from alice's own session")
    }

    @Test func presence_setuidCallerStartedByTheTargetItself_isOffered() {
        // sudo in alice's terminal: real uid alice.
        let verdict = Presence.decide(Self.setuid(by: "alice", in: Self.session("alice")), target: "alice")
        #expect(verdict == .offered(requester: "alice"))
    }

    @Test func presence_rootProcessAsksOnlyForItsSessionsOwner() {
        #expect(Presence.decide(Self.root(in: Self.session("alice")), target: "alice") == .offered(requester: "alice"))
        #expect(
            Presence.decide(Self.root(in: Self.session("alice")), target: "bob")
                == .refused(.notTheTargetsSession("bob")))
    }

    @Test func presence_rootProcessAtAnActiveGreeter_mayAskForAnyone() {
        let greeter = Self.session("gdm", "greeter")
        #expect(Presence.decide(Self.root(in: greeter), target: "alice") == .offered(requester: nil))
        #expect(Presence.decide(Self.root(in: greeter), target: "bob") == .offered(requester: nil))
    }

    @Test func presence_greeterNotInFront_isRefused() {
        let greeter = Self.session("gdm", "greeter", active: false)
        #expect(Presence.decide(Self.root(in: greeter), target: "alice") == .refused(.sessionNotInFront("alice")))
    }

    @Test func presence_sessionNotInFrontOnItsSeat_isRefused() {
        // Fast user switching: alice's session runs on behind bob's.
        let verdict = Presence.decide(Self.user(in: Self.session("alice", active: false)), target: "alice")
        #expect(verdict == .refused(.sessionNotInFront("alice")))
    }

    @Test func presence_sessionWithoutASeat_isRefused() {
        let verdict = Presence.decide(Self.user(in: Self.session("alice", seat: nil)), target: "alice")
        #expect(verdict == .refused(.sessionNotInFront("alice")))
    }

    @Test func presence_remoteSession_isRefusedEvenForTheOwnAccount() {
        let verdict = Presence.decide(Self.user(in: Self.session("alice", seat: nil, remote: true)), target: "alice")
        #expect(verdict == .refused(.remoteSession))
    }

    @Test func presence_rootWithNoSessionOnTheForegroundVT_isOffered() {
        // login on a virtual terminal before pam_systemd: the person types their own name.
        #expect(Presence.decide(Self.root(in: nil, vt: true), target: "alice") == .offered(requester: nil))
        #expect(
            Presence.decide(Self.root(in: nil, vt: true, logind: false), target: "alice") == .offered(requester: nil))
    }

    @Test func presence_rootWithNoSessionOffTheForegroundVT_isRefused() {
        // cron, a system service, root's tools outside any session.
        #expect(Presence.decide(Self.root(in: nil), target: "alice") == .refused(.noLoginSession))
        #expect(Presence.decide(Self.root(in: nil, logind: false), target: "root") == .refused(.noLoginSession))
    }

    @Test func presence_rootCallerWhoseRealUIDIsUnknown_isRefused() {
        let origin = RequestOrigin(uid: 0, name: "root", realUID: nil, session: Self.session("alice"))
        #expect(Presence.decide(origin, target: "alice") == .refused(.requesterUnknown))
    }

    @Test func presence_userProcessInNoSession_isOfferedOnlyWhileTheUserIsInFrontOnASeat() {
        // A user service, or an app the user manager started: logind places it in no session.
        var origin = Self.user(in: nil)
        origin.requesterActiveOnASeat = true
        #expect(Presence.decide(origin, target: "alice") == .offered(requester: "alice"))
        origin.requesterActiveOnASeat = false
        #expect(Presence.decide(origin, target: "alice") == .refused(.sessionNotInFront("alice")))
    }

    @Test func presence_withoutLogind_theRequesterMustStillBeTheTarget() {
        var own = Self.user(in: nil)
        own.logindPresent = false
        #expect(Presence.decide(own, target: "alice") == .offered(requester: "alice"))
        var su = Self.setuid(by: "bob", in: nil)
        su.logindPresent = false
        #expect(Presence.decide(su, target: "alice") == .refused(.notTheTargetsSession("alice")))
    }

    @Test func presence_connectionWhoseCreatorExited_isRefused() {
        var origin = Self.user(in: Self.session("alice"))
        origin.connectionOrphaned = true
        #expect(Presence.decide(origin, target: "alice") == .refused(.connectionOrphaned))
    }

    @Test func presence_uidWithoutAName_isRefused() {
        let origin = RequestOrigin(uid: 4242, name: nil, realUID: 4242, session: Self.session(nil))
        #expect(Presence.decide(origin, target: "alice") == .refused(.notTheTargetsSession("alice")))
    }
}
