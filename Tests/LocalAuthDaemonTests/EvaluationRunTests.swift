// SPDX-License-Identifier: Apache-2.0
// The evaluation run in process: the real `Daemon`, the real libfprint virtual_device, a temporary
// store, no socket. Each test is a child process of its own (one libfprint context per process);
// `make test` runs them with the other exit tests (scripts/exit-tests.sh).

import Glibc
import LocalAuthDaemon
import LocalAuthProtocol
import Testing

@Suite(.serialized, .timeLimit(.minutes(1)))
struct EvaluationRunTests {
    @Test func evaluate_whenTheEnrolledFingerTouches_succeedsWithThatFinger() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let d = try await InProcessDaemon.enrolled()
            var run = d.start(InProcessDaemon.fingerOnly())
            let prompt = await run.next(.placeFinger)
            check(
                prompt?.finger == "right-index-finger",
                "the prompt names the one enrolled finger: \(String(describing: prompt))")
            try await d.simulate("touch", InProcessDaemon.enrolledScan)
            let result = await run.result()
            check(result.resultCode == .success, "a match succeeds: \(result.message)")
            check(result.fields.string(.finger) == "right-index-finger", "the RESULT names the finger")
            try await expectFingerFailures(d, 0, "no failure is stored")
            d.finish()
        }
        reportChildErrors(result)
    }

    /// The virtual reader reports the finger and its match at once (as a match-on-chip sensor does):
    /// the touch's count and the match's reset go to disk as one record (written before the answer,
    /// synced and renamed after it since issue 29's second round), where they were two writes, the count's with the directory synced too (seven
    /// steps). Issue 29: this is what made prompt → result three times fprintd's.
    @Test func evaluate_whenTheReaderMatchesAsItReportsTheFinger_writesTheCountAndResetAsOneRecord() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let d = try await InProcessDaemon.start()
            try await d.enrollTheUser()
            // The first match also records the finger's use (the password rules' record, at most once
            // a minute): the second is measured.
            var first = d.start(InProcessDaemon.fingerOnly())
            await first.next(.placeFinger)
            try await d.simulate("touch", InProcessDaemon.enrolledScan)
            check(await first.result().resultCode == .success, "the first match succeeds")
            await d.daemon.finishAfterAnswer()
            let before = d.writeSteps
            var run = d.start(InProcessDaemon.fingerOnly())
            await run.next(.placeFinger)
            try await d.simulate("touch", InProcessDaemon.enrolledScan)
            let result = await run.result()
            check(result.resultCode == .success, "a match succeeds: \(result.message)")
            // Issue 29, second round: written before the answer, synced and renamed after it.
            let told = d.writeSteps - before
            check(told == 1, "the record written before the answer, not yet synced: \(told) steps")
            await d.daemon.finishAfterAnswer()
            let steps = d.writeSteps - before
            check(steps == 3, "one record written (temporary file written, synced, renamed): \(steps) steps")
            let failures = try await d.storedState()?.fingerFailures
            check(failures == 0, "no failure is stored: \(String(describing: failures))")
            d.finish()
        }
        reportChildErrors(result)
    }

    @Test func evaluate_whenAnotherFingerTouches_failsAndCountsOneFailure() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let d = try await InProcessDaemon.enrolled()
            var run = d.start(InProcessDaemon.fingerOnly(tries: 1))
            await run.next(.placeFinger)
            try await d.simulate("touch", "someone-else")
            let result = await run.result()
            check(result.resultCode == .authenticationFailed, "a miss fails: \(result.message)")
            check(run.seen.contains { $0.kind == .noMatch }, "a noMatch event: \(run.seen)")
            try await expectFingerFailures(d, 1, "one failure is stored")
            d.finish()
        }
        reportChildErrors(result)
    }

    @Test func evaluate_whenFiveFingersMiss_locksBiometricsPersistsAndAuditsIt() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let d = try await InProcessDaemon.enrolled()
            var run = d.start(InProcessDaemon.fingerOnly(tries: 5))
            await run.next(.placeFinger)
            for _ in 1...5 {
                try await d.simulate("touch", "someone-else")
                await run.next(.noMatch)
            }
            let result = await run.result()
            check(result.resultCode == .biometryLockout, "the fifth miss locks: \(result.message)")
            check(run.seen.contains { $0.kind == .biometryLocked }, "a biometryLocked event: \(run.seen)")
            let state = try await d.storedState()
            check(state?.biometryLocked == true && state?.fingerFailures == 5, "stored: \(String(describing: state))")
            // Locked: the right finger is not even asked for.
            var next = d.start(InProcessDaemon.fingerOnly())
            let after = await next.result()
            check(after.resultCode == .biometryLockout, "the next evaluation is locked out: \(after.message)")
            check(!next.seen.contains { $0.kind == .placeFinger }, "no finger is asked for: \(next.seen)")
            d.finish()
        }
        let audit = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(audit.contains("audit op=lockout user=\"lasplit-alice\" change=\"biometry locked\""), "\(audit)")
        reportChildErrors(result)
    }

    @Test func evaluate_withTwoFingerAttemptsConfigured_locksAfterTheSecondMiss() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let d = try await InProcessDaemon.enrolled { $0.lockout.fingerAttempts = 2 }
            var run = d.start(InProcessDaemon.fingerOnly(tries: 5))
            await run.next(.placeFinger)
            for _ in 1...2 {
                try await d.simulate("touch", "someone-else")
                await run.next(.noMatch)
            }
            let result = await run.result()
            check(result.resultCode == .biometryLockout, "the configured limit locks: \(result.message)")
            let state = try await d.storedState()
            check(state?.biometryLocked == true && state?.fingerFailures == 2, "stored: \(String(describing: state))")
            d.finish()
        }
        reportChildErrors(result)
    }

    @Test func evaluate_whenTheReaderAsksForARetry_passesTheHintOnAndKeepsScanningWithoutCounting() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let d = try await InProcessDaemon.enrolled()
            var run = d.start(InProcessDaemon.fingerOnly(tries: 1))
            await run.next(.placeFinger)
            try await d.simulate("retry", "1")  // FP_DEVICE_RETRY_TOO_SHORT
            let hint = await run.next(.retry)
            check(hint?.hint == .tooShort, "the hint reaches the client: \(String(describing: hint))")
            try await d.simulate("touch", InProcessDaemon.enrolledScan)
            let result = await run.result()
            check(result.resultCode == .success, "the scan went on and matched: \(result.message)")
            try await expectFingerFailures(d, 0, "a retry is no failure")
            d.finish()
        }
        reportChildErrors(result)
    }

    /// CANCEL from the client ends it as userCancel; the door cancelling the request (what the
    /// socket does when its client disconnects) as systemCancel. Neither counts, and the reader is
    /// free for the next evaluation.
    @Test(arguments: ["client", "door"])
    func evaluate_whenCancelled_endsUncountedAndFreesTheReader(by canceller: String) async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) { [canceller] in
            let d = try await InProcessDaemon.enrolled()
            var run = d.start(InProcessDaemon.fingerOnly())
            await run.next(.placeFinger)
            if canceller == "client" { run.signals.yield(.cancel) } else { run.task.cancel() }
            let expected: ResultCode = canceller == "client" ? .userCancel : .systemCancel
            let result = await run.result()
            check(result.resultCode == expected, "cancelled by the \(canceller): \(result.message)")
            try await expectFingerFailures(d, 0, "a cancel is no failure")
            try await expectTheReaderServesTheNextEvaluation(d)
            d.finish()
        }
        reportChildErrors(result)
    }

    @Test func evaluate_whenNoFingerComesInTime_endsAsSystemCancelUncountedAndFreesTheReader() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let d = try await InProcessDaemon.enrolled()
            var run = d.start(InProcessDaemon.fingerOnly(timeoutMs: 300))
            let result = await run.result()
            check(
                result.resultCode == .systemCancel && result.message == "Timed out waiting for a fingerprint",
                "the deadline ends it: \(result.message)")
            try await expectFingerFailures(d, 0, "a timeout is no failure")
            try await expectTheReaderServesTheNextEvaluation(d)
            d.finish()
        }
        reportChildErrors(result)
    }

    @Test func evaluate_whenTheReaderIsUnpluggedMidway_answersBiometryNotAvailableUncounted() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let d = try await InProcessDaemon.enrolled()
            var run = d.start(InProcessDaemon.fingerOnly())
            await run.next(.placeFinger)
            try await d.simulate("unplug")
            let result = await run.result()
            check(
                result.resultCode == .biometryNotAvailable && result.message.contains("unplugged"),
                "an unplug is said as such: \(result.message)")
            try await expectFingerFailures(d, 0, "an unplug is no failure")
            d.finish()
        }
        reportChildErrors(result)
    }

    @Test func evaluate_afterAMissAndTheFallback_asksForThePasscodeAgainAfterAWrongOneAndAcceptsTheRightOne() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let d = try await InProcessDaemon.enrolled()
            let set = await d.request(
                .passcodeSet(user: InProcessDaemon.user, passcode: "correct horse", oldPasscode: nil),
                as: InProcessDaemon.root)
            try #require(set.isSuccess, "\(set.message)")
            var run = d.start(InProcessDaemon.fingerOrPasscode())
            await run.next(.placeFinger)
            try await d.simulate("touch", "someone-else")
            try #require(await run.next(.fallbackAvailable) != nil, "the fallback is offered after a miss")
            run.signals.yield(.fallback)
            try #require(await run.next(.passcodeNeeded) != nil, "the fallback asks for the passcode")
            run.signals.yield(.passcode("battery staple"))
            try #require(await run.next(.passcodeWrong) != nil, "a wrong passcode is said")
            // The daemon asks again, so a client that prompts only on passcodeNeeded is not left waiting.
            try #require(await run.next(.passcodeNeeded) != nil, "the passcode is asked for again")
            run.signals.yield(.passcode("correct horse"))
            let result = await run.result()
            check(result.message == "Authenticated with passcode", "the passcode succeeds: \(result.message)")
            let state = try await d.storedState()
            check(
                state?.fingerFailures == 0 && state?.passcodeFailures == 0,
                "a correct passcode clears the counters: \(String(describing: state))")
            d.finish()
        }
        reportChildErrors(result)
    }

    @Test func prepareForSleep_cancelsTheRunningEvaluationAndForgetsReuseWindows() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let d = try await InProcessDaemon.enrolled()
            let reusing = Request.evaluate(
                EvaluateOptions(
                    policy: .deviceOwnerAuthenticationWithBiometrics, user: InProcessDaemon.user,
                    service: "in-process-test", reuseSeconds: 60, tries: 1, timeoutMs: 20_000))
            var first = d.start(reusing)
            await first.next(.placeFinger)
            try await d.simulate("touch", InProcessDaemon.enrolledScan)
            let matched = await first.result()
            try #require(matched.isSuccess, "\(matched.message)")
            var reused = d.start(reusing)
            let reuse = await reused.result()
            check(
                reuse.isSuccess && !reused.seen.contains { $0.kind == .placeFinger },
                "a recent success is reused without a finger: \(reuse.message)")

            var running = d.start(InProcessDaemon.fingerOnly())
            await running.next(.placeFinger)
            await d.daemon.prepareForSleep()
            let cancelled = await running.result()
            check(cancelled.resultCode == .systemCancel, "sleep cancels the running evaluation: \(cancelled.message)")
            await d.daemon.resumedFromSleep()

            var after = d.start(reusing)
            let prompt = await after.next(.placeFinger)
            check(prompt != nil, "after sleep the finger is asked for again")
            try await d.simulate("touch", InProcessDaemon.enrolledScan)
            let again = await after.result()
            check(again.isSuccess, "the reader works after resume: \(again.message)")
            d.finish()
        }
        reportChildErrors(result)
    }
}

extension InProcessDaemon {
    /// A daemon whose user has the one finger enrolled.
    fileprivate static func enrolled(_ configure: (inout DaemonConfiguration) -> Void = { _ in }) async throws
        -> InProcessDaemon
    {
        let d = try await start(configure)
        try await d.enrollTheUser()
        return d
    }
}

/// The user's stored count of missed fingers is `expected`.
private func expectFingerFailures(_ d: InProcessDaemon, _ expected: Int, _ why: String) async throws {
    let failures = try await d.storedState()?.fingerFailures
    check(failures == expected, "\(why): \(String(describing: failures))")
}

/// A fresh evaluation is prompted for and matches: whatever ended the last one let go of the reader.
private func expectTheReaderServesTheNextEvaluation(_ d: InProcessDaemon) async throws {
    var next = d.start(InProcessDaemon.fingerOnly())
    try #require(await next.next(.placeFinger) != nil, "the next evaluation asks for a finger")
    try await d.simulate("touch", InProcessDaemon.enrolledScan)
    let result = await next.result()
    check(result.resultCode == .success, "the next evaluation matches: \(result.message)")
}
