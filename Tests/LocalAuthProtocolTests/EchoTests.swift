// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import LocalAuthProtocol

/// Client strings a reply repeats are bounded and escaped where the message is built, and a
/// reply built from them throws or is replaced, never traps (issue 13, H2).
@Suite struct EchoTests {
    @Test func quoted_whenValueIsLongOrHostile_isOneBoundedEscapedToken() {
        #expect(Echo.quoted("alice") == "'alice'")
        #expect(Echo.quoted("it's\n\u{1B}[2J\\") == "'it\\'s\\x0a\\x1b[2J\\\\'")
        let long = Echo.quoted(String(repeating: "a", count: 1000))
        #expect(long == "'" + String(repeating: "a", count: Echo.identifierLimit) + "…'")
        // Four bytes a character, every one escaped or not, the token stays far below a field.
        #expect(Echo.quoted(String(repeating: "😀", count: 1000)).utf8.count <= 4 * Echo.identifierLimit + 5)
        #expect(Echo.quoted(String(repeating: "\u{7}", count: 1000)).utf8.count <= 4 * Echo.identifierLimit + 5)
    }

    /// C1 controls (U+0080–U+009F) are escaped as C0 ones are; the characters after them are kept.
    @Test func escaped_whenValueHasC1Controls_escapesThemAsC0() {
        #expect(
            Echo.escaped("a\u{9B}2J\u{9D}0;x\u{85}\u{80}\u{9F}\u{A0}é", quote: "\"", limit: 64)
                == "a\\x9b2J\\x9d0;x\\x85\\x80\\x9f\u{A0}é")
    }

    @Test(arguments: [("r", 1), ("é", 2), ("😀", 4), ("e\u{301}", 3)])
    func truncated_cutsAtACharacterBoundaryWithinTheLimit(unit: String, bytes: Int) {
        let text = String(repeating: unit, count: 2000)
        for limit in [0, 1, 3, 4, 5, 63, 64, 1024] {
            let cut = Echo.truncated(text, maxBytes: limit)
            #expect(cut.utf8.count <= limit)
            if limit >= 3 + bytes { #expect(cut.hasSuffix("…") && cut.dropLast().allSatisfy { String($0) == unit }) }
        }
        #expect(Echo.truncated("short", maxBytes: 5) == "short")
    }

    /// What a client prints of the daemon's text has no control character: the name another process
    /// chose, `\e]0;PWN\a\e[2K`, retitled the window and erased the line (issue 26). C0, DEL and C1
    /// (U+009B is CSI to some terminals) become U+FFFD; everything else stays.
    @Test func printable_replacesC0DELAndC1Controls_andKeepsTheRest() {
        let hostile = "in use by \u{1B}]0;PWN\u{07}\u{1B}[2K for alice\u{7F}\u{9B}2J\r\n\t"
        let shown = Echo.printable(hostile)
        #expect(!shown.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
        #expect(
            shown == "in use by \u{FFFD}]0;PWN\u{FFFD}\u{FFFD}[2K for alice\u{FFFD}\u{FFFD}2J\u{FFFD}\u{FFFD}\u{FFFD}")
        let plain = "Place your left thumb on the reader (/usr/bin/sudo for ålice — 指纹) ¡\u{A0}"
        #expect(Echo.printable(plain) == plain)
    }

    @Test func appendText_whenTextIsLongerThanAField_cutsItToFit() throws {
        var f = Frame(.result)
        f.append(.message, text: String(repeating: "é", count: 5000))
        #expect(f.first(.message)!.count <= Wire.maxFieldSize)
        _ = try f.encode()
    }

    @Test func encode_whenAFieldOrTheBodyIsTooLarge_throwsInsteadOfTrapping() {
        var field = Frame(.result)
        field.append(.user, string: String(repeating: "a", count: Wire.maxFieldSize + 1))
        #expect(throws: ProtocolError.self) { try field.encode() }
        var body = Frame(.result)
        for _ in 0..<5 { body.append(.finger, string: String(repeating: "a", count: Wire.maxFieldSize)) }
        #expect(throws: ProtocolError.self) { try body.encode() }
    }

    @Test func encodedForWire_whenAResultCannotFit_sendsInternalErrorInstead() throws {
        let extra = (0..<5).map { _ in Field(tag: .finger, value: Array(repeating: 0x61, count: Wire.maxFieldSize)) }
        let bytes = ServerMessage.result(RequestResult(.success, "fine", extra: extra)).encodedForWire()
        var reader = FrameReader()
        reader.append(bytes)
        let frame = try #require(try reader.next())
        let result = try RequestResult(frame: frame)
        #expect(result.resultCode == .internalError)
        let message = String(repeating: "m", count: 4000)
        let event = try Event(
            frame: try #require(try frames(ServerMessage.event(Event(.info, message)).encodedForWire())))
        #expect(event.message.utf8.count <= Wire.maxFieldSize && event.message.hasSuffix("…"))
    }

    /// A client's long texts are cut when the request is built, so an app never traps on them; a
    /// right's use is cut as EVALUATE is (its frame was refused as too large before).
    @Test(arguments: ["evaluate", "rightUse"])
    func request_whenReasonIsLongerThanAField_isCutNotRefused(kind: String) throws {
        let long = String(repeating: "x", count: 3000)
        var use = RightUseOptions(identifier: "vault", operation: .authorize)
        use.reason = long
        use.fallbackTitle = long
        use.cancelTitle = long
        let request: Request =
            kind == "evaluate"
            ? .evaluate(EvaluateOptions(policy: .deviceOwnerAuthentication, prompt: use.prompt)) : .rightUse(use)
        let decoded = try Request(frame: try #require(try frames(try request.frame.encode())))
        let reason: String? =
            switch decoded {
            case .evaluate(let o): o.reason
            case .rightUse(let o): o.reason
            default: nil
            }
        #expect(reason.map { $0.utf8.count <= Wire.maxFieldSize && $0.hasSuffix("…") } == true, "\(decoded)")
    }

    private func frames(_ bytes: [UInt8]) throws -> Frame? {
        var reader = FrameReader()
        reader.append(bytes)
        return try reader.next()
    }
}
