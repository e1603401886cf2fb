// SPDX-License-Identifier: Apache-2.0

import Foundation
import Testing

/// docs/policy.md and the tests name each other: a row without a test, or a test without a row,
/// fails here.
@Suite struct DocumentationTests {
    static let prefixes = [
        "evaluate_", "canEvaluate_", "biometryType_", "passcodeDelay_", "passcodeChange_", "presence_",
    ]

    static func names(in text: String, after marker: String, until terminators: Set<Character>) -> Set<String> {
        var found: Set<String> = []
        var rest = text[...]
        while let range = rest.range(of: marker) {
            let tail = rest[range.upperBound...]
            let name = String(tail.prefix { !terminators.contains($0) })
            if prefixes.contains(where: name.hasPrefix) { found.insert(name) }
            rest = tail
        }
        return found
    }

    @Test func policyDoc_everyRowHasATestAndEveryTestARow() throws {
        let testsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let doc = try String(
            contentsOf: testsDirectory.appendingPathComponent("../../docs/policy.md"), encoding: .utf8)
        var sources = ""
        for file in try FileManager.default.contentsOfDirectory(atPath: testsDirectory.path)
        where file.hasSuffix(".swift") {
            sources += try String(contentsOf: testsDirectory.appendingPathComponent(file), encoding: .utf8)
        }
        let rows = Self.names(in: doc, after: "`", until: ["`"])
        let tests = Self.names(in: sources, after: "func ", until: ["(", " "])
        #expect(rows.count >= 70)
        #expect(rows.subtracting(tests).sorted() == [], "rows naming no test")
        #expect(tests.subtracting(rows).sorted() == [], "tests without a row")
    }
}
