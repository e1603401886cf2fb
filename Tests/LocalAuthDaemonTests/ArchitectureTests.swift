// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

/// The one rule: dependencies point from the edges to the core, never back. Read from Package.swift.
@Suite struct ArchitectureTests {
    /// What each target may depend on (ours only; products of other packages are not checked here).
    static let allowed: [String: Set<String>] = [
        "LocalAuthProtocol": [],
        "LocalAuthCore": ["LocalAuthProtocol"],
        "FingerprintReader": ["CLibfprint"],
        "LocalAuthStore": ["LocalAuthCore", "CCrypt"],
        "LocalAuthDaemon": ["LocalAuthProtocol", "LocalAuthCore", "FingerprintReader", "LocalAuthStore", "CSystemd"],
        "LocalAuthClient": ["LocalAuthProtocol"],
        "localauthd": ["LocalAuthDaemon"],
        "localauthctl": ["LocalAuthClient"],
        "LocalAuthentication": ["LocalAuthClient", "LocalAuthProtocol"],
    ]

    static func manifest() -> String {
        let path =
            String(#filePath.dropLast("Tests/LocalAuthDaemonTests/ArchitectureTests.swift".count)) + "Package.swift"
        return (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    /// Target name → the quoted names in its `dependencies:` list.
    static func declaredDependencies() -> [String: Set<String>] {
        let text = manifest()
        var result: [String: Set<String>] = [:]
        let ours = Set(allowed.keys).union(["CLibfprint", "CCrypt", "CSystemd"])
        for chunk in text.components(separatedBy: "name: \"").dropFirst() {
            guard let nameEnd = chunk.firstIndex(of: "\"") else { continue }
            let name = String(chunk[..<nameEnd])
            guard allowed[name] != nil else { continue }
            let body = chunk.components(separatedBy: "name: \"").first ?? ""
            guard let deps = body.range(of: "dependencies:") else {
                result[name, default: []] = []
                continue
            }
            let quoted = body[deps.upperBound...].split(separator: "\"").enumerated().filter { $0.offset % 2 == 1 }.map
            { String($0.element) }
            result[name, default: []].formUnion(quoted.filter { ours.contains($0) })
        }
        return result
    }

    @Test func manifest_declaresEveryKnownTarget() {
        #expect(Set(Self.declaredDependencies().keys) == Set(Self.allowed.keys))
    }

    @Test func dependencies_pointOnlyTowardTheCore() {
        for (target, deps) in Self.declaredDependencies() {
            let extra = deps.subtracting(Self.allowed[target] ?? [])
            #expect(extra.isEmpty, "\(target) depends on \(extra.sorted()), which the architecture forbids")
        }
    }
}
