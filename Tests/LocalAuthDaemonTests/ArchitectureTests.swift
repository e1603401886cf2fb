// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

/// The one rule: dependencies point from the edges to the core, never back; C and systemd stay
/// where they are confined. Read from Package.swift and from the import lines of every Swift file.
@Suite struct ArchitectureTests {
    /// Each target with sources, and every module its files may import (ours, other packages'
    /// products, the toolchain's). A target missing here, or an import outside its set, fails.
    static let allowed: [String: Set<String>] = [
        // The leaves: pure, no I/O.
        "LocalAuthProtocol": [],
        "LocalAuthCore": ["LocalAuthProtocol"],
        "SSHAgentProtocol": ["SHA2"],
        "SHA2": [],
        // The edges, each with its C.
        "FingerprintReader": ["CLibfprint", "LocalAuthProtocol", "Glibc", "Dispatch", "Synchronization"],
        "LocalAuthCrypto": ["Crypto", "SHA2"],
        "LocalAuthStore": [
            "LocalAuthProtocol", "LocalAuthCore", "LocalAuthCrypto", "CCrypt", "Glibc", "Synchronization",
        ],
        "LocalAuthSystemd": ["CSystemd", "Logging", "Glibc", "Dispatch", "Synchronization"],
        // The daemon: no C of its own, no Foundation, no door (and so no NIO, no bus calls of a door).
        "LocalAuthDaemon": [
            "LocalAuthProtocol", "LocalAuthCore", "FingerprintReader", "LocalAuthStore", "LocalAuthSystemd",
            "LocalAuthCrypto", "Logging", "Glibc", "Dispatch", "Synchronization",
        ],
        // The doors' shared admission (request turns, the notice throttle): the standard library only.
        "LocalAuthDoorLimits": ["Synchronization"],
        // REQUESTER's byte with its descriptor (SCM_RIGHTS), both ends: glibc only.
        "DescriptorPassing": ["Glibc"],
        // The doors: the daemon's public API, never the store or the crypto behind it, never each other.
        "LocalAuthSocketDoor": [
            "LocalAuthDaemon", "LocalAuthDoorLimits", "LocalAuthProtocol", "LocalAuthCore", "LocalAuthSystemd",
            "DescriptorPassing", "NIOCore", "NIOPosix", "Glibc", "Synchronization",
        ],
        // The readers it shows come from the daemon too (`Daemon.readerWatch`), never the reader itself.
        "LocalAuthFprintdDoor": [
            "LocalAuthDaemon", "LocalAuthDoorLimits", "LocalAuthProtocol", "LocalAuthSystemd", "Glibc", "Dispatch",
            "Synchronization",
        ],
        // Start-up: builds the parts once, runs the doors and the services.
        "localauthd": [
            "LocalAuthDaemon", "LocalAuthSocketDoor", "LocalAuthFprintdDoor", "LocalAuthSystemd", "LocalAuthStore",
            "FingerprintReader", "Glibc", "Dispatch", "Synchronization",
        ],
        // The clients know the protocol, never the daemon.
        "LocalAuthClient": ["LocalAuthProtocol", "DescriptorPassing", "Glibc"],
        // The clients' gettext: glibc only (the daemon never renders a line in a person's language).
        "LocalAuthLocalization": ["LocalAuthProtocol", "CGettext", "Glibc"],
        "localauthctl": [
            "LocalAuthClient", "LocalAuthProtocol", "LocalAuthLocalization", "SSHAgentProtocol", "ArgumentParser",
            "Glibc",
        ],
        // Observation: Apple's `LAContext: Observable` conformance (docs/apple-api.md, CTX-19).
        "LocalAuthentication": [
            "LocalAuthClient", "LocalAuthProtocol", "LocalAuthCrypto", "LocalAuthLocalization", "Foundation", "Glibc",
            "Observation",
        ],
        "vault": ["LocalAuthentication", "Foundation"],
        // The booted tier's two views of a caller (sd-login's files, logind's bus): LocalAuthSystemd's own.
        "localauth-bench": [
            "LocalAuthentication", "LocalAuthClient", "LocalAuthProtocol", "LocalAuthSystemd", "Foundation", "Glibc",
        ],
        // Tests: their subject, what they drive it with, and the toolchain.
        "LocalAuthTesting": ["LocalAuthClient", "LocalAuthProtocol", "Testing", "Foundation", "Glibc"],
        "LocalAuthProtocolTests": ["LocalAuthProtocol", "Testing", "Glibc"],
        "SSHAgentProtocolTests": ["SSHAgentProtocol", "Testing"],
        "LocalAuthCoreTests": ["LocalAuthCore", "LocalAuthProtocol", "Testing", "Foundation"],
        "FingerprintReaderTests": [
            "FingerprintReader", "LocalAuthProtocol", "LocalAuthTesting", "Testing", "Glibc", "Synchronization",
        ],
        // Crypto: each key algorithm checked against swift-crypto's own operations.
        "LocalAuthCryptoTests": ["LocalAuthCrypto", "Crypto", "Testing"],
        // Dispatch: AtomicityTests holds writes in progress on other threads while users/ is swept.
        "LocalAuthStoreTests": [
            "LocalAuthStore", "LocalAuthCore", "LocalAuthProtocol", "LocalAuthCrypto", "LocalAuthTesting", "Testing",
            "Glibc", "Synchronization", "Dispatch",
        ],
        "LocalAuthDaemonTests": [
            "LocalAuthDaemon", "LocalAuthSocketDoor", "LocalAuthFprintdDoor", "LocalAuthDoorLimits", "LocalAuthSystemd",
            "LocalAuthProtocol", "LocalAuthCore", "FingerprintReader",
            "LocalAuthStore", "LocalAuthTesting", "Testing", "Foundation", "Glibc", "Synchronization",
            // LogindRepliesTests builds sd-bus messages as systemd's logind sends them.
            "CSystemd",
        ],
        "IntegrationTests": [
            "LocalAuthClient", "LocalAuthProtocol", "LocalAuthStore", "LocalAuthCore", "LocalAuthTesting", "Testing",
            "DescriptorPassing", "Foundation", "Synchronization",
        ],
        "LocalAuthenticationTests": [
            "LocalAuthentication", "LocalAuthClient", "LocalAuthProtocol", "LocalAuthLocalization", "LocalAuthTesting",
            "LocalAuthCrypto", "Testing", "Foundation", "Glibc",
        ],
        "AppleStyleTests": ["LocalAuthentication", "Testing", "Foundation", "Observation"],
    ]

    /// Modules that only these files may import, even within a target allowed to.
    static let onlyFiles: [String: Set<String>] = [
        "CLibfprint": ["Sources/FingerprintReader/Libfprint.swift"]
    ]

    static let root = String(#filePath.dropLast("Tests/LocalAuthDaemonTests/ArchitectureTests.swift".count))

    static func manifest() throws -> Manifest {
        Manifest(text: try String(contentsOfFile: root + "Package.swift", encoding: .utf8))
    }

    /// Every Swift file under Sources/, Tests/ and Examples/.
    static func sourceFiles() throws -> [SourceFile] {
        var files: [SourceFile] = []
        for top in ["Sources", "Tests", "Examples"] {
            guard let walker = FileManager.default.enumerator(atPath: root + top) else { continue }
            while let relative = walker.nextObject() as? String {
                guard relative.hasSuffix(".swift") else { continue }
                let path = top + "/" + relative
                files.append(SourceFile(path: path, text: try String(contentsOfFile: root + path, encoding: .utf8)))
            }
        }
        return files
    }

    @Test func theTree_keepsTheArchitecture() throws {
        let files = try Self.sourceFiles()
        #expect(files.count > 50, "the walk found \(files.count) Swift files under \(Self.root)")
        let problems = architectureViolations(
            manifest: try Self.manifest(), files: files, allowed: Self.allowed, onlyFiles: Self.onlyFiles)
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    @Test func manifest_isReadWithEveryTargetAndItsDependencies() throws {
        let manifest = try Self.manifest()
        let daemon = try #require(manifest.targets.first { $0.name == "LocalAuthDaemon" })
        #expect(daemon.dependencies.isSuperset(of: ["LocalAuthSystemd", "Logging"]))
        #expect(!daemon.dependencies.contains("NIOCore"), "the socket's event loop is the socket door's")
        let socket = try #require(manifest.targets.first { $0.name == "LocalAuthSocketDoor" })
        #expect(socket.dependencies.isSuperset(of: ["LocalAuthDaemon", "NIOCore", "NIOPosix"]))
        #expect(!socket.dependencies.contains("swift-nio"), "a package name is not a module")
        #expect(manifest.targets.first { $0.name == "vault" }?.directory == "Examples/Vault")
        #expect(manifest.targets.first { $0.name == "CSystemd" }?.kind == "systemLibrary")
    }

    /// The doors go into the daemon through its public API only: the real table, on made-up files
    /// of the real targets that compile today only because the modules are on the search path.
    @Test func theDoors_whenADoorReachesPastTheDaemonOrTheDaemonImportsADoor_fail() throws {
        let files = [
            SourceFile(path: "Sources/LocalAuthSocketDoor/Past.swift", text: "import LocalAuthStore\n"),
            SourceFile(path: "Sources/LocalAuthFprintdDoor/Other.swift", text: "import LocalAuthSocketDoor\n"),
            SourceFile(path: "Sources/LocalAuthFprintdDoor/Reader.swift", text: "import FingerprintReader\n"),
            SourceFile(path: "Sources/LocalAuthDaemon/Back.swift", text: "@testable import LocalAuthFprintdDoor\n"),
            SourceFile(path: "Sources/LocalAuthDaemon/Nio.swift", text: "import NIOCore\n"),
        ]
        let problems = architectureViolations(
            manifest: try Self.manifest(), files: files, allowed: Self.allowed, onlyFiles: Self.onlyFiles)
        #expect(
            problems == [
                "Sources/LocalAuthSocketDoor/Past.swift imports LocalAuthStore, outside what LocalAuthSocketDoor may import",
                "Sources/LocalAuthFprintdDoor/Other.swift imports LocalAuthSocketDoor, outside what LocalAuthFprintdDoor may import",
                "Sources/LocalAuthFprintdDoor/Reader.swift imports FingerprintReader, outside what LocalAuthFprintdDoor may import",
                "Sources/LocalAuthDaemon/Back.swift imports LocalAuthFprintdDoor, outside what LocalAuthDaemon may import",
                "Sources/LocalAuthDaemon/Nio.swift imports NIOCore, outside what LocalAuthDaemon may import",
            ])
        // And no arrow from the daemon, or from one door, to a door in the table itself.
        let doors: Set = ["LocalAuthSocketDoor", "LocalAuthFprintdDoor"]
        for (target, modules) in Self.allowed where !modules.isDisjoint(with: doors) {
            #expect(
                target == "localauthd" || target.hasSuffix("Tests"), "\(target) may import a door")
        }
    }

    // The checker itself must fail where the rule is broken.

    static let tinyManifest = """
        targets: [
            .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd"),
            .target(name: "Core"),
            .target(name: "Glue", dependencies: ["CSystemd"]),
            .target(name: "Daemon", dependencies: ["Core", "Glue", .product(name: "NIOCore", package: "swift-nio")]),
        ]
        """
    static let tinyTable: [String: Set<String>] = [
        "Core": [], "Glue": ["CSystemd"], "Daemon": ["Core", "Glue", "NIOCore", "Glibc"],
    ]

    @Test func check_whenEveryFileKeepsItsSet_findsNothing() {
        let files = [
            SourceFile(path: "Sources/Daemon/A.swift", text: "import Core\nimport Glue\nimport NIOCore\n"),
            SourceFile(path: "Sources/Glue/B.swift", text: "import CSystemd\n"),
        ]
        let problems = architectureViolations(
            manifest: Manifest(text: Self.tinyManifest), files: files, allowed: Self.tinyTable, onlyFiles: [:])
        #expect(problems.isEmpty, "\(problems)")
    }

    @Test func check_whenATargetIsMissingFromTheTable_fails() {
        var table = Self.tinyTable
        table["Glue"] = nil
        let problems = architectureViolations(
            manifest: Manifest(text: Self.tinyManifest), files: [], allowed: table, onlyFiles: [:])
        #expect(problems.contains { $0.hasPrefix("target Glue is not in the architecture table") }, "\(problems)")
    }

    @Test func check_whenAFileImportsOutsideItsTargetsSet_fails() {
        // Compiles (CSystemd reaches the daemon through Glue), and is exactly what the rule forbids.
        let files = [
            SourceFile(path: "Sources/Daemon/A.swift", text: "import Core\n#if DEBUG\n    import CSystemd\n#endif\n")
        ]
        let problems = architectureViolations(
            manifest: Manifest(text: Self.tinyManifest), files: files, allowed: Self.tinyTable, onlyFiles: [:])
        #expect(problems == ["Sources/Daemon/A.swift imports CSystemd, outside what Daemon may import"])
    }

    @Test func check_whenAnImportIsAllowedButNotDeclared_fails() {
        var table = Self.tinyTable
        table["Core"] = ["Glue"]
        let files = [SourceFile(path: "Sources/Core/C.swift", text: "@testable import Glue\n")]
        let problems = architectureViolations(
            manifest: Manifest(text: Self.tinyManifest), files: files, allowed: table, onlyFiles: [:])
        #expect(problems == ["Sources/Core/C.swift imports Glue, which Core does not declare in Package.swift"])
    }

    @Test func check_whenAModuleIsImportedOutsideItsOnlyFiles_fails() {
        let files = [
            SourceFile(path: "Sources/Glue/B.swift", text: "import CSystemd\n"),
            SourceFile(path: "Sources/Glue/Other.swift", text: "import CSystemd\n"),
        ]
        let problems = architectureViolations(
            manifest: Manifest(text: Self.tinyManifest), files: files, allowed: Self.tinyTable,
            onlyFiles: ["CSystemd": ["Sources/Glue/B.swift"]])
        #expect(problems == ["Sources/Glue/Other.swift imports CSystemd; only Sources/Glue/B.swift may"])
    }

    @Test func check_whenADependencyPointsBack_fails() {
        let manifest = Manifest(
            text: Self.tinyManifest.replacingOccurrences(
                of: "name: \"Core\")", with: "name: \"Core\", dependencies: [\"Daemon\"])"))
        let problems = architectureViolations(manifest: manifest, files: [], allowed: Self.tinyTable, onlyFiles: [:])
        #expect(problems == ["Core depends on Daemon, which the architecture forbids"])
    }

    @Test func check_whenAFileBelongsToNoTarget_fails() {
        let files = [SourceFile(path: "Sources/Stray/S.swift", text: "")]
        let problems = architectureViolations(
            manifest: Manifest(text: Self.tinyManifest), files: files, allowed: Self.tinyTable, onlyFiles: [:])
        #expect(problems == ["Sources/Stray/S.swift belongs to no target"])
    }

    @Test func importedModules_readsAttributesKindsAndIfBlocks_butNotStringsOrComments() {
        let source = #"""
            // SPDX-License-Identifier: Apache-2.0
            import Glibc
            @testable import LocalAuthDaemon
            @_spi(Testing) import Logging
            import struct Dispatch.DispatchTime
            #if canImport(Synchronization)
                import Synchronization
            #endif
            let script = """
                import socket
                """
            /*
            import Foundation
            */
            // import CSystemd
            let importance = 1
            """#
        #expect(importedModules(of: source) == ["Glibc", "LocalAuthDaemon", "Logging", "Dispatch", "Synchronization"])
    }
}
