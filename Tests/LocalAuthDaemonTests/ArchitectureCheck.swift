// SPDX-License-Identifier: Apache-2.0
// The architecture rule as a pure function over Package.swift's text and the sources' texts, so that
// ArchitectureTests can run it over the real tree and over small made-up trees that must fail.

import Foundation

/// Package.swift's targets, read from its text: kind, name, path and declared dependencies.
struct Manifest {
    struct Target: Equatable {
        var kind: String
        var name: String
        var path: String?
        /// The names in `dependencies:`: targets, and products by their name (never their package).
        var dependencies: Set<String>

        /// Where SwiftPM looks for the target's sources.
        var directory: String { path ?? (kind == "testTarget" ? "Tests/" : "Sources/") + name }
        /// The name other modules import it by.
        var module: String { name.replacingOccurrences(of: "-", with: "_") }
    }

    var targets: [Target] = []

    /// Every module the manifest defines or brings in: targets and the products they depend on.
    var modules: Set<String> {
        Set(targets.map(\.module)).union(targets.flatMap(\.dependencies))
    }

    init(text: String) {
        let kinds = ["target", "executableTarget", "testTarget", "systemLibrary"]
        var rest = Substring(text)
        while let (kind, open) = Self.nextTarget(in: rest, kinds: kinds) {
            let body = Self.balanced(rest[open...])
            rest = rest[body.endIndex...]
            guard let name = Self.quoted(after: "name:", in: body) else { continue }
            var dependencies: Set<String> = []
            if let list = Self.list(after: "dependencies:", in: body) {
                dependencies = Self.dependencyNames(list)
            }
            targets.append(
                Target(kind: kind, name: name, path: Self.quoted(after: "path:", in: body), dependencies: dependencies))
        }
    }

    /// The next `.KIND(` of a target, and where its `(` is.
    private static func nextTarget(in text: Substring, kinds: [String]) -> (String, String.Index)? {
        var best: (String, String.Index, String.Index)?
        for kind in kinds {
            guard let range = text.range(of: ".\(kind)(") else { continue }
            if best == nil || range.lowerBound < best!.1 {
                best = (kind, range.lowerBound, text.index(before: range.upperBound))
            }
        }
        return best.map { ($0.0, $0.2) }
    }

    /// From an opening bracket to its partner, string literals skipped.
    private static func balanced(_ text: Substring) -> Substring {
        var depth = 0
        var inString = false
        var index = text.startIndex
        while index < text.endIndex {
            let c = text[index]
            if c == "\"" { inString.toggle() }
            if !inString {
                if c == "(" || c == "[" { depth += 1 }
                if c == ")" || c == "]" {
                    depth -= 1
                    if depth == 0 { return text[...index] }
                }
            }
            index = text.index(after: index)
        }
        return text
    }

    private static func quoted(after label: String, in text: Substring) -> String? {
        guard let labelRange = text.range(of: label) else { return nil }
        let after = text[labelRange.upperBound...].drop { $0 == " " || $0 == "\n" }
        guard after.first == "\"" else { return nil }
        return String(after.dropFirst().prefix { $0 != "\"" })
    }

    private static func list(after label: String, in text: Substring) -> Substring? {
        guard let labelRange = text.range(of: label),
            let open = text[labelRange.upperBound...].firstIndex(of: "[")
        else { return nil }
        return balanced(text[open...])
    }

    /// `"A"`, `.product(name: "B", package: "p")`, `.target(name: "C")` → A, B, C.
    private static func dependencyNames(_ list: Substring) -> Set<String> {
        var names: Set<String> = []
        let pieces = list.split(separator: "\"", omittingEmptySubsequences: false)
        // Odd pieces are the insides of string literals; the piece before says what they are.
        for i in stride(from: 1, to: pieces.count, by: 2) {
            let before = pieces[i - 1].trimmingCharacters(in: .whitespacesAndNewlines)
            if before.hasSuffix("package:") { continue }
            names.insert(String(pieces[i]))
        }
        return names
    }
}

/// The module names a Swift source imports, in order: `import X`, `@testable import X`,
/// `import struct X.Y`, also inside `#if`. Lines inside multi-line string literals and comments
/// are not code and are skipped.
func importedModules(of source: String) -> [String] {
    var modules: [String] = []
    /// Inside a multi-line string literal: what ends it (`"""`, or `"""#` for a raw one).
    var closing: String?
    var inBlockComment = false
    let declarationKinds: Set<Substring> = ["typealias", "struct", "class", "enum", "protocol", "let", "var", "func"]
    for rawLine in source.split(separator: "\n", omittingEmptySubsequences: false) {
        let line = rawLine.drop { $0 == " " || $0 == "\t" }
        if let end = closing {
            if line.contains(end) { closing = nil }
            continue
        }
        if inBlockComment {
            if line.contains("*/") { inBlockComment = false }
            continue
        }
        if line.hasPrefix("/*") && !line.contains("*/") {
            inBlockComment = true
            continue
        }
        if let open = line.range(of: "\"\"\""), !line[open.upperBound...].contains("\"\"\"") {
            let hashes = line[..<open.lowerBound].reversed().prefix { $0 == "#" }.count
            closing = "\"\"\"" + String(repeating: "#", count: hashes)
            continue
        }
        var words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })[...]
        while let first = words.first, first.hasPrefix("@") { words = words.dropFirst() }
        guard words.first == "import", words.count >= 2 else { continue }
        words = words.dropFirst()
        if let kind = words.first, declarationKinds.contains(kind), words.count >= 2 { words = words.dropFirst() }
        guard let path = words.first else { continue }
        modules.append(String(path.prefix { $0 != "." && $0 != ";" }))
    }
    return modules
}

/// One Swift file of the tree: its path from the package root and its text.
struct SourceFile {
    var path: String
    var text: String
}

/// The rule, checked: every target of the manifest is in `allowed`, and no other; a target declares
/// and imports only what `allowed` gives it (toolchain modules are not declared); every import of
/// one of the manifest's modules is declared; a module in `onlyFiles` is imported only by those
/// files; every file belongs to a target. Returns one line per violation.
func architectureViolations(
    manifest: Manifest, files: [SourceFile], allowed: [String: Set<String>], onlyFiles: [String: Set<String>]
) -> [String] {
    var problems: [String] = []
    let withSources = manifest.targets.filter { $0.kind != "systemLibrary" }
    for target in withSources where allowed[target.name] == nil {
        problems.append("target \(target.name) is not in the architecture table: add it with what it may import")
    }
    for name in allowed.keys.sorted() where !withSources.contains(where: { $0.name == name }) {
        problems.append("the architecture table lists \(name), which Package.swift does not define")
    }
    let modules = manifest.modules
    for target in withSources {
        let permitted = allowed[target.name] ?? []
        for dependency in target.dependencies.sorted() where modules.contains(dependency) {
            if !permitted.contains(dependency) {
                problems.append("\(target.name) depends on \(dependency), which the architecture forbids")
            }
        }
    }
    for file in files {
        let owners = withSources.filter { file.path.hasPrefix($0.directory + "/") }
        guard let target = owners.max(by: { $0.directory.count < $1.directory.count }) else {
            problems.append("\(file.path) belongs to no target")
            continue
        }
        let permitted = allowed[target.name] ?? []
        for module in importedModules(of: file.text) {
            if !permitted.contains(module) {
                problems.append("\(file.path) imports \(module), outside what \(target.name) may import")
            } else if modules.contains(module) && module != target.module && !target.dependencies.contains(module) {
                problems.append(
                    "\(file.path) imports \(module), which \(target.name) does not declare in Package.swift")
            }
            if let only = onlyFiles[module], !only.contains(file.path) {
                problems.append("\(file.path) imports \(module); only \(only.sorted().joined(separator: ", ")) may")
            }
        }
    }
    return problems
}
