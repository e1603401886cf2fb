// SPDX-License-Identifier: Apache-2.0

import LocalAuthCore
import LocalAuthProtocol
import Testing

/// A caller's reason and titles reach the person's prompt, but however long the caller made
/// them (a field may carry 1024 bytes), every event still fits one field and still says what to
/// do (issue 13, H2: a 1000-byte reason used to make a prompt the daemon trapped on).
@Suite struct EchoedTextTests {
    /// The longest texts a request can carry, in shapes that cut differently: ASCII, two-byte
    /// and four-byte characters, combining marks, and control characters.
    static let longest: [String] = [
        String(repeating: "r", count: Wire.maxFieldSize),
        String(repeating: "é", count: Wire.maxFieldSize / 2),
        String(repeating: "😀", count: Wire.maxFieldSize / 4),
        String(repeating: "e\u{301}", count: Wire.maxFieldSize / 3),
        String(repeating: "\n\u{1B}[2J", count: Wire.maxFieldSize / 5),
    ]

    /// Every event of an evaluation that offers the fallback, misses until locked, then asks for
    /// the passcode.
    static func events(_ o: EvaluateOptions) -> [Notice] {
        var (evaluator, out) = started(o, state: withPasscode, facts: twoFingers)
        out += evaluator.handle(.fingerRetry(.tooShort), nowMs: t0)
        out += miss(&evaluator, times: 5)
        out += enter(&evaluator, correct: false, token: "a")
        return out.events
    }

    @Test(arguments: longest)
    func prompt_whenReasonAndTitlesAreAsLongAsAFieldAllows_fitsAFieldAndKeepsTheInstruction(text: String) throws {
        for policy in PolicyKind.allCases {
            let o = options(policy, reason: text, fallbackTitle: text, cancelTitle: text)
            let events = Self.events(o)
            for event in events {
                #expect(
                    event.message.utf8.count <= Wire.maxFieldSize, "\(event.kind) of \(event.message.utf8.count) bytes")
                _ = try Event(event.kind, event.message).frame.encode()
            }
            // Policy 3 (the passcode alone) asks for no finger: its passcode prompts fit, checked above.
            if policy == .devicePasscode {
                #expect(events.contains { $0.kind == .passcodeNeeded })
                continue
            }
            #expect(events.contains { $0.kind == .placeFinger })
            let prompt = try #require(events.first { $0.kind == .placeFinger }?.message)
            #expect(prompt.contains("on the reader"), "the instruction must survive: \(prompt.suffix(80))")
            #expect(prompt.hasSuffix("…]"), "the cancel title is cut, and marked so: \(prompt.suffix(20))")
            #expect(prompt.unicodeScalars.first == text.unicodeScalars.first)
        }
    }

    @Test func prompt_whenReasonAndTitlesAreShort_carriesThemWhole() {
        let events = Self.events(options(reason: "Unlock the vault", fallbackTitle: "Password", cancelTitle: "Stop"))
        let prompt = events.first { $0.kind == .placeFinger }?.message
        #expect(prompt == "Unlock the vault: Place a finger on the reader [Stop]")
        #expect(events.contains { $0.kind == .fallbackAvailable && $0.message == "Password" })
    }
}
