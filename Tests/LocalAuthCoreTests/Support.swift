// SPDX-License-Identifier: Apache-2.0

import LocalAuthCore
import LocalAuthProtocol
import Testing

/// The injected clock's starting point: an arbitrary, realistic epoch time.
let t0: Int64 = 1_700_000_000_000
let hash = "$y$j9T$salt$hash"
let rightIndex = FingerName.rightIndex

let oneFinger = EvaluationFacts(enrolledFingers: [rightIndex])
let twoFingers = EvaluationFacts(enrolledFingers: [rightIndex, .leftIndex])
let noReader = EvaluationFacts(readerUnavailable: .lidClosed, enrolledFingers: [])
let noFinger = EvaluationFacts(enrolledFingers: [])

let withPasscode = UserAuthState(passcodeHash: hash, domainState: [1, 2, 3])

func options(
    _ policy: PolicyKind = .deviceOwnerAuthenticationWithBiometrics, reason: String? = nil,
    fallbackTitle: String? = nil, cancelTitle: String? = nil, flags: RequestFlags = [.passcodeCapable],
    reuseSeconds: Int64 = 0, tries: Int64 = 3, timeoutMs: Int64 = 30_000
) -> EvaluateOptions {
    EvaluateOptions(
        policy: policy, user: "alice", service: "sudo", reason: reason, fallbackTitle: fallbackTitle,
        cancelTitle: cancelTitle, flags: flags, reuseSeconds: reuseSeconds, tries: tries, timeoutMs: timeoutMs)
}

/// An evaluator already started at `t0`, with the outputs of `start`.
func started(
    _ options: EvaluateOptions, state: UserAuthState = withPasscode, facts: EvaluationFacts = oneFinger,
    config: LockoutConfig = LockoutConfig(), at nowMs: Int64 = t0
) -> (PolicyEvaluator, [PolicyOutput]) {
    var evaluator = PolicyEvaluator(options: options, state: state, facts: facts, config: config)
    let out = evaluator.start(nowMs: nowMs)
    return (evaluator, out)
}

/// A `.persist` the daemon must see written before it goes on.
func persist(_ state: UserAuthState) -> PolicyOutput { .persist(state, ifItFails: .refuse) }

extension Notice {
    /// What the person reads, in English.
    var message: String { phrase.english }
}

extension Decision {
    var message: String { phrase.english }
}

extension [PolicyOutput] {
    var events: [Notice] {
        compactMap { if case .notify(let n) = $0 { n } else { nil } }
    }
    var eventKinds: [EventKind] { events.map(\.kind) }
    var result: Decision? {
        compactMap { if case .finish(let d) = $0 { d } else { nil } }.first
    }
    var code: ResultCode? { result?.code }
    var persisted: [UserAuthState] {
        compactMap { if case .persist(let s, _) = $0 { s } else { nil } }
    }
    var persistsAnything: Bool { !persisted.isEmpty }

    func firstIndex(ofEvent kind: EventKind) -> Int? {
        firstIndex { if case .notify(let n) = $0 { n.kind == kind } else { false } }
    }
    var finishIndex: Int? { firstIndex { if case .finish = $0 { true } else { false } } }
    var persistIndex: Int? { firstIndex { if case .persist = $0 { true } else { false } } }
    /// The outputs without writes: what the person and the reader see.
    var withoutWrites: [PolicyOutput] { filter { if case .persist = $0 { false } else { true } } }
}

/// Feeds `misses` non-matching fingers, returning all outputs.
func miss(_ evaluator: inout PolicyEvaluator, times misses: Int, at nowMs: Int64 = t0) -> [PolicyOutput] {
    (0..<misses).flatMap { _ in evaluator.handle(.fingerNotMatched, nowMs: nowMs) }
}

/// Types a passcode into an evaluator waiting for one: the attempt is counted, then the hash checked.
func enter(
    _ evaluator: inout PolicyEvaluator, correct: Bool, token: String = "t", at nowMs: Int64 = t0
) -> [PolicyOutput] {
    let counted = evaluator.handle(.passcodeEntered, nowMs: nowMs)
    guard counted.contains(.checkPasscode) else { return counted }
    return counted + evaluator.handle(.passcodeChecked(correct: correct, attemptToken: token), nowMs: nowMs)
}

/// An evaluator for policy 2 already waiting for a passcode (no finger usable).
func awaitingPasscode(
    state: UserAuthState = withPasscode, config: LockoutConfig = LockoutConfig(), at nowMs: Int64 = t0,
    timeoutMs: Int64 = 300_000
) -> PolicyEvaluator {
    let (evaluator, out) = started(
        options(.deviceOwnerAuthentication, timeoutMs: timeoutMs), state: state, facts: noFinger, config: config,
        at: nowMs)
    #expect(out.contains(.requestPasscode), "the fixture expects a passcode prompt: \(out)")
    return evaluator
}

/// True when both outputs exist and the first comes strictly before the second.
func precedes(_ first: Int?, _ second: Int?) -> Bool {
    guard let first, let second else { return false }
    return first < second
}
