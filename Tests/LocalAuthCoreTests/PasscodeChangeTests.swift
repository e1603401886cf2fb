// SPDX-License-Identifier: Apache-2.0

import LocalAuthCore
import LocalAuthProtocol
import Testing

/// Rows C of docs/policy.md: setting, changing and removing a passcode (`PasscodeChange`), with the
/// evaluator's counting rules.
@Suite struct PasscodeChangeTests {
    func change(
        _ kind: PasscodeChange.Change = .set, root: Bool = false, old: Bool = true, state: UserAuthState = withPasscode,
        readable: Bool = true
    ) -> (PasscodeChange, [PasscodeChange.Output]) {
        var machine = PasscodeChange(
            user: "alice", change: kind, callerIsRoot: root, oldPasscodeGiven: old, state: state,
            stateReadable: readable, config: LockoutConfig())
        let out = machine.start(nowMs: t0)
        return (machine, out)
    }

    func counted(_ failures: Int, untilMs: Int64 = 0) -> UserAuthState {
        var s = withPasscode.observed(t0)
        s.passcodeFailures = failures
        s.passcodeLockedUntilMs = untilMs
        return s
    }

    @Test func passcodeChange_byRoot_needsNoProof() {
        var (machine, out) = change(root: true, old: false, state: UserAuthState())
        #expect(out == [.hashNewPasscode])
        let stored = machine.handle(.newPasscodeHashed("$y$new"), nowMs: t0)
        var expected = UserAuthState(lastSeenMs: t0)
        expected.passcodeHash = "$y$new"
        #expect(
            stored == [
                .persist(expected, ifItFails: .refuse), .finish(Decision(.success, .passcodeSet(user: "alice"))),
            ])
    }

    @Test func passcodeChange_firstPasscodeByTheUser_needsTheirFingerInTheSameRequest() {
        var (machine, out) = change(old: false, state: UserAuthState())
        #expect(out == [.proveByFinger])
        let proved = machine.handle(
            .fingerProof(Decision(.success, .authenticatedWithFinger), state: UserAuthState()), nowMs: t0)
        #expect(proved == [.hashNewPasscode])

        var (refused, _) = change(old: false, state: UserAuthState())
        var missed = UserAuthState()
        missed.fingerFailures = 1
        let out2 = refused.handle(
            .fingerProof(Decision(.authenticationFailed, .fingerNotRecognised), state: missed), nowMs: t0)
        let phrase = Phrase.firstPasscodeNeedsFinger(user: "alice", because: .fingerNotRecognised)
        #expect(out2 == [.finish(Decision(.authenticationFailed, phrase))])
        #expect(
            phrase.english
                == "A first passcode needs an enrolled finger, or root (sudo localauthctl passcode set --user alice): Fingerprint not recognised"
        )
        #expect(refused.state.fingerFailures == 1)  // the proof's miss stays counted
    }

    @Test func passcodeChange_removeWithoutAPasscode_isNotFound() {
        let (_, out) = change(.remove, state: UserAuthState())
        #expect(out == [.finish(Decision(.notFound, .noPasscodeToRemove(user: "alice")))])
    }

    @Test func passcodeChange_theCurrentPasscodeIsCountedBeforeItIsHashed() {
        var (machine, out) = change()
        #expect(out == [.persist(counted(1), ifItFails: .refuse), .checkOldPasscode])
        let right = machine.handle(.oldPasscodeChecked(correct: true), nowMs: t0)
        #expect(right == [.hashNewPasscode])
        let stored = machine.handle(.newPasscodeHashed("$y$new"), nowMs: t0)
        #expect(stored.first.map { if case .persist(let s, _) = $0 { s.passcodeFailures == 0 } else { false } } == true)
        #expect(stored.last == .finish(Decision(.success, .passcodeSet(user: "alice"))))
    }

    @Test func passcodeChange_wrongCurrentPasscode_staysCountedAndIsRefused() {
        var (machine, _) = change(.remove)
        let out = machine.handle(.oldPasscodeChecked(correct: false), nowMs: t0)
        #expect(out == [.finish(Decision(.authenticationFailed, .currentPasscodeWrong))])
        #expect(machine.state.passcodeFailures == 1)
        #expect(machine.state.passcodeHash == hash)
    }

    @Test func passcodeChange_sixthWrongCurrentPasscode_startsTheDelayAndSaysSo() {
        var state = withPasscode
        state.passcodeFailures = 5
        var (machine, out) = change(state: state)
        #expect(out.first == .persist(counted(6, untilMs: t0 + 60_000), ifItFails: .refuse))
        let refused = machine.handle(.oldPasscodeChecked(correct: false), nowMs: t0)
        let phrase = Phrase.both(.currentPasscodeWrong, .passcodeLocked(remainingMs: 60_000))
        #expect(refused == [.finish(Decision(.authenticationFailed, phrase))])
        #expect(phrase.english == "The current passcode is wrong — Passcode locked; try again in 1 minute")
    }

    @Test func passcodeChange_duringADelay_isRefusedUncountedAndUnhashed() {
        var state = withPasscode
        state.passcodeFailures = 6
        state.passcodeLockedUntilMs = t0 + 60_000
        let (_, out) = change(state: state)
        #expect(out == [.finish(Decision(.authenticationFailed, .passcodeLocked(remainingMs: 60_000)))])
    }

    @Test func passcodeChange_withoutTheCurrentPasscode_isRefusedUncounted() {
        let (machine, out) = change(old: false)
        #expect(out == [.finish(Decision(.authenticationFailed, .currentPasscodeNeeded))])
        #expect(machine.state.passcodeFailures == 0)
    }

    @Test func passcodeChange_whenTheCountCannotBeWritten_rightAndWrongAreRefusedAlikeUnhashed() {
        var (machine, out) = change()
        #expect(out.last == .checkOldPasscode)
        // The write before the check failed: the daemon never checked the passcode.
        let refused = machine.handle(.recordFailed, nowMs: t0)
        #expect(refused == [.finish(Decision(.biometryNotAvailable, .attemptNotRecorded))])
        #expect(machine.handle(.oldPasscodeChecked(correct: true), nowMs: t0).isEmpty)
    }

    @Test func passcodeChange_whenTheNewPasscodeCannotBeStored_saysSo() {
        var (machine, _) = change(root: true, old: false)
        _ = machine.handle(.newPasscodeHashed("$y$new"), nowMs: t0)
        let failed = machine.handle(.recordFailed, nowMs: t0)
        #expect(failed == [.finish(Decision(.internalError, .passcodeNotStored))])
    }

    @Test func passcodeChange_whenStateUnreadable_failsClosed() {
        let (_, out) = change(root: true, readable: false)
        #expect(out == [.finish(Decision(.biometryNotAvailable, .stateUnreadable))])
    }
}
