// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import LocalAuthProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// One line of `Tests/Fixtures/protocol/vocabulary.txt`, the vocabulary the Swift, C and Python
/// codecs share (ADR 0009).
struct VocabularyEntry: Hashable, CustomStringConvertible {
    let kind: String
    let value: Int64
    let name: String
    /// For tags: `int`, `str` or `bytes`, then `repeated` when the tag may repeat.
    let extra: [String]
    var description: String { "\(kind) \(value) \(name) \(extra.joined(separator: " "))" }

    static let path = Fixture.path("vocabulary.txt")

    static let all: [VocabularyEntry] = Fixture.lines("vocabulary.txt").compactMap { line in
        let text = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        if words.isEmpty { return nil }
        precondition(words.count >= 3, "\(path): short line '\(text)'")
        let raw = words[1]
        let value = raw.hasPrefix("0x") ? Int64(raw.dropFirst(2), radix: 16) : Int64(raw)
        return VocabularyEntry(kind: words[0], value: value ?? .min, name: words[2], extra: Array(words.dropFirst(3)))
    }

    static func of(_ kind: String) -> [String: Int64] {
        Dictionary(all.filter { $0.kind == kind }.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
    }
}

/// The Swift codec's tables against the shared fixture, both ways: a value, name or kind that
/// differs, or a word one side has and the other lacks, fails here.
@Suite struct VocabularyTests {
    /// One issue per word that differs, naming it, rather than two whole tables side by side.
    static func expectSame<Value: Equatable>(
        _ swift: [String: Value], _ fixture: [String: Value], _ kind: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        for name in Set(swift.keys).union(fixture.keys).sorted() where swift[name] != fixture[name] {
            Issue.record(
                "\(kind) \(name): Swift has \(swift[name].map { "\($0)" } ?? "nothing"), the fixture \(fixture[name].map { "\($0)" } ?? "nothing")",
                sourceLocation: sourceLocation)
        }
        #expect(!fixture.isEmpty, "the fixture has no \(kind)", sourceLocation: sourceLocation)
    }

    @Test func fixture_isWellFormed_andEachValueAndNameIsUniqueInItsKind() {
        let entries = VocabularyEntry.all
        #expect(entries.count >= 100)
        for entry in entries { #expect(entry.value != .min, "\(entry): value is not a number") }
        let kinds = Set(entries.map(\.kind))
        #expect(kinds == ["message", "tag", "event", "result", "hint", "policy", "flag"])
        for kind in kinds {
            let rows = entries.filter { $0.kind == kind }
            #expect(Set(rows.map(\.value)).count == rows.count, "\(kind): a value appears twice")
            #expect(Set(rows.map(\.name)).count == rows.count, "\(kind): a name appears twice")
        }
    }

    @Test func messageTypes_matchTheFixture() {
        #expect(Set(MessageType.names.map(\.type)).count == MessageType.names.count, "a message type appears twice")
        let swift = Dictionary(uniqueKeysWithValues: MessageType.names.map { ($0.name, Int64($0.type)) })
        Self.expectSame(swift, VocabularyEntry.of("message"), "message")
    }

    @Test func fieldTags_matchTheFixture_inNameKindAndRepetition() {
        let spelled: [FieldKind: String] = [.int: "int", .string: "str", .bytes: "bytes"]
        var swift: [String: String] = [:]
        for (tag, row) in FieldTag.table.enumerated() {
            guard let row else { continue }
            swift[row.name] = "\(tag) \(spelled[row.kind]!)" + (row.repeated ? " repeated" : "")
        }
        var fixture: [String: String] = [:]
        for entry in VocabularyEntry.all where entry.kind == "tag" {
            fixture[entry.name] = "\(entry.value) " + entry.extra.joined(separator: " ")
        }
        Self.expectSame(swift, fixture, "tag")
    }

    @Test func eventKinds_matchTheFixture() {
        let swift = Dictionary(uniqueKeysWithValues: EventKind.allCases.map { ("\($0)", $0.rawValue) })
        Self.expectSame(swift, VocabularyEntry.of("event"), "event")
    }

    @Test func resultCodes_matchTheFixture() {
        let swift = Dictionary(uniqueKeysWithValues: ResultCode.allCases.map { ($0.name, $0.rawValue) })
        Self.expectSame(swift, VocabularyEntry.of("result"), "result")
        for code in ResultCode.allCases { #expect(code.name == "\(code)") }
    }

    @Test func retryHintsPoliciesAndFlags_matchTheFixture() {
        Self.expectSame(
            Dictionary(uniqueKeysWithValues: RetryHint.allCases.map { ("\($0)", $0.rawValue) }),
            VocabularyEntry.of("hint"), "hint")
        Self.expectSame(
            Dictionary(uniqueKeysWithValues: PolicyKind.allCases.map { ("\($0)", $0.rawValue) }),
            VocabularyEntry.of("policy"), "policy")
        let flags: [String: RequestFlags] = [
            "interactionNotAllowed": .interactionNotAllowed, "all": .all, "passcodeCapable": .passcodeCapable,
        ]
        Self.expectSame(flags.mapValues(\.rawValue), VocabularyEntry.of("flag"), "flag")
    }
}
