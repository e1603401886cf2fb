// SPDX-License-Identifier: Apache-2.0

import LocalAuthCore
import Testing

/// Rows U1–U7 of docs/policy.md: who may report that a password was used.
@Suite struct PasswordReportTests {
    static func session(
        own: Bool = true, kind: String = "user", active: Bool = true, remote: Bool = false
    ) -> SessionFacts {
        SessionFacts(
            owner: "alice", ownerUID: own ? 1000 : 1001, sessionClass: kind, seat: nil, isActive: active,
            isRemote: remote)
    }

    @Test func passwordReport_fromRoot_isBelievedWithOrWithoutASession() {
        // login or a greeter's worker before pam_systemd: no session yet.
        #expect(PasswordReport.decide(.init(callerUID: 0, callerIsRoot: true, session: nil)) == .believed)
        // sudo, su, polkit's helper inside the user's session.
        #expect(
            PasswordReport.decide(.init(callerUID: 0, callerIsRoot: true, session: Self.session(own: false)))
                == .believed)
    }

    @Test func passwordReport_fromARemoteSession_isRefusedEvenFromRoot() {
        for root in [true, false] {
            let verdict = PasswordReport.decide(
                .init(callerUID: root ? 0 : 1000, callerIsRoot: root, session: Self.session(remote: true)))
            #expect(verdict == .refused(.remoteSession))
        }
        #expect(
            PasswordReport.Refusal.remoteSession.message == "Password use not recorded: it comes from a remote session")
    }

    @Test func passwordReport_fromTheUsersOwnActiveLocalSession_isBelieved() {
        #expect(
            PasswordReport.decide(.init(callerUID: 1000, callerIsRoot: false, session: Self.session())) == .believed)
    }

    @Test func passwordReport_fromTheUserOutsideAnySession_isRefused() {
        // A cron job, a user service, or any caller when there is no logind to ask.
        #expect(
            PasswordReport.decide(.init(callerUID: 1000, callerIsRoot: false, session: nil)) == .refused(.noSession))
    }

    @Test func passwordReport_fromAnotherUsersSessionOrAGreeterOrBackgroundSession_isRefused() {
        #expect(
            PasswordReport.decide(.init(callerUID: 1000, callerIsRoot: false, session: Self.session(own: false)))
                == .refused(.notOwnSession))
        for kind in ["greeter", "background", "lock-screen", "manager"] {
            #expect(
                PasswordReport.decide(.init(callerUID: 1000, callerIsRoot: false, session: Self.session(kind: kind)))
                    == .refused(.sessionClass(kind)))
        }
    }

    @Test func passwordReport_fromAnInactiveSession_isRefused() {
        #expect(
            PasswordReport.decide(.init(callerUID: 1000, callerIsRoot: false, session: Self.session(active: false)))
                == .refused(.sessionNotActive))
    }

    @Test func passwordReport_whenTheConnectingProcessHasExited_isRefused() {
        #expect(
            PasswordReport.decide(.init(callerUID: 0, callerIsRoot: true, session: nil, connectionOrphaned: true))
                == .refused(.connectionOrphaned))
    }
}
