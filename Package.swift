// swift-tools-version:6.0
// SPDX-License-Identifier: Apache-2.0
import PackageDescription

// The one rule: dependencies point from the edges to the core, never back.
// Tests/LocalAuthDaemonTests/ArchitectureTests.swift reads this file and every source file's imports,
// and fails on a target missing from its table, a back arrow, or an import outside a target's set.
let package = Package(
    name: "localauth",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "localauthd", targets: ["localauthd"]),
        .executable(name: "localauthctl", targets: ["localauthctl"]),
        .library(name: "LocalAuthentication", targets: ["LocalAuthentication"]),
        .executable(name: "vault", targets: ["vault"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // P-256 and AES-GCM for LARight keys and the sealing of the state directory (ADR 0006).
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
    ],
    targets: [
        // C, confined: each system library is reached from exactly one Swift target (libfprint: one file).
        .systemLibrary(
            name: "CLibfprint", pkgConfig: "libfprint-2", providers: [.apt(["libfprint-2-dev", "libglib2.0-dev"])]),
        .systemLibrary(name: "CCrypt", pkgConfig: "libcrypt", providers: [.apt(["libcrypt-dev"])]),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        // glibc's gettext (libintl.h): LocalAuthLocalization and no other.
        .systemLibrary(name: "CGettext"),

        // The leaves: pure, no I/O.
        .target(name: "LocalAuthProtocol"),
        .target(name: "LocalAuthCore", dependencies: ["LocalAuthProtocol"]),
        // The ssh agent protocol (draft-miller-ssh-agent) for `localauthctl ssh-agent`.
        .target(name: "SSHAgentProtocol", dependencies: ["SHA2"]),
        // SHA-256's compression, written once: SHA-224 (LocalAuthCrypto) and ssh fingerprints.
        .target(name: "SHA2"),

        // The edges.
        .target(name: "FingerprintReader", dependencies: ["CLibfprint", "LocalAuthProtocol"]),
        // swift-crypto, confined: sealing at rest and the rights' P-256 keys (ADR 0006).
        .target(
            name: "LocalAuthCrypto", dependencies: ["SHA2", .product(name: "Crypto", package: "swift-crypto")]),
        .target(
            name: "LocalAuthStore", dependencies: ["LocalAuthProtocol", "LocalAuthCore", "LocalAuthCrypto", "CCrypt"]),
        // libsystemd (sd-daemon, sd-journal, sd-login, sd-bus): this target and no other.
        .target(
            name: "LocalAuthSystemd",
            dependencies: ["CSystemd", .product(name: "Logging", package: "swift-log")]),
        // The daemon: the use cases behind `Daemon.handle` and the state they share. It knows no door.
        .target(
            name: "LocalAuthDaemon",
            dependencies: [
                "LocalAuthProtocol", "LocalAuthCore", "FingerprintReader", "LocalAuthStore", "LocalAuthSystemd",
                "LocalAuthCrypto", .product(name: "Logging", package: "swift-log"),
            ]),
        // REQUESTER's byte that carries a descriptor (SCM_RIGHTS): the client sends it, the socket door takes it.
        .target(name: "DescriptorPassing"),
        // The doors' shared admission: per-uid request turns and the throttle of a caller's log lines.
        .target(name: "LocalAuthDoorLimits"),
        // The doors: each goes into the daemon through its public API (`Daemon.handle`) only.
        .target(
            name: "LocalAuthSocketDoor",
            dependencies: [
                "LocalAuthDaemon", "LocalAuthDoorLimits", "LocalAuthProtocol", "LocalAuthCore", "LocalAuthSystemd",
                "DescriptorPassing", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]),
        .target(
            name: "LocalAuthFprintdDoor",
            dependencies: [
                "LocalAuthDaemon", "LocalAuthDoorLimits", "LocalAuthProtocol", "LocalAuthSystemd",
            ]),
        .target(name: "LocalAuthClient", dependencies: ["LocalAuthProtocol", "DescriptorPassing"]),
        // glibc's gettext for the clients (po/, text domain "localauth"); the daemon never renders.
        .target(name: "LocalAuthLocalization", dependencies: ["LocalAuthProtocol", "CGettext"]),
        // Start-up: builds the parts once and runs the doors and the daemon's services.
        .executableTarget(
            name: "localauthd",
            dependencies: [
                "LocalAuthDaemon", "LocalAuthSocketDoor", "LocalAuthFprintdDoor", "LocalAuthSystemd", "LocalAuthStore",
                "FingerprintReader",
            ]),
        .executableTarget(
            name: "localauthctl",
            dependencies: [
                "LocalAuthClient", "LocalAuthProtocol", "LocalAuthLocalization", "SSHAgentProtocol",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        .target(
            name: "LocalAuthentication",
            dependencies: [
                "LocalAuthClient", "LocalAuthProtocol", "LocalAuthCrypto", "LocalAuthLocalization",
            ]),
        .executableTarget(name: "vault", dependencies: ["LocalAuthentication"], path: "Examples/Vault"),
        // The Swift-client figures of `make bench`; not a product, never installed.
        .executableTarget(
            name: "localauth-bench",
            dependencies: ["LocalAuthentication", "LocalAuthClient", "LocalAuthProtocol", "LocalAuthSystemd"]),

        // Test support, for test targets only: the real daemon as a process, the mock logind,
        // temporary directories, Unix sockets (Tests/README.md).
        .target(
            name: "LocalAuthTesting", dependencies: ["LocalAuthClient", "LocalAuthProtocol"],
            path: "Tests/LocalAuthTesting"),

        .testTarget(name: "LocalAuthProtocolTests", dependencies: ["LocalAuthProtocol"], resources: []),
        .testTarget(name: "SSHAgentProtocolTests", dependencies: ["SSHAgentProtocol"]),
        .testTarget(name: "LocalAuthCoreTests", dependencies: ["LocalAuthCore", "LocalAuthProtocol"]),
        .testTarget(
            name: "FingerprintReaderTests",
            dependencies: ["FingerprintReader", "LocalAuthProtocol", "LocalAuthTesting"]),
        .testTarget(
            name: "LocalAuthCryptoTests",
            dependencies: ["LocalAuthCrypto", .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(
            name: "LocalAuthStoreTests",
            dependencies: [
                "LocalAuthStore", "LocalAuthCore", "LocalAuthProtocol", "LocalAuthCrypto", "LocalAuthTesting",
            ]),
        .testTarget(
            name: "LocalAuthDaemonTests",
            dependencies: [
                "LocalAuthDaemon", "LocalAuthSocketDoor", "LocalAuthFprintdDoor", "LocalAuthDoorLimits",
                "LocalAuthSystemd", "LocalAuthProtocol", "LocalAuthCore", "FingerprintReader", "LocalAuthStore",
                "LocalAuthTesting",
                // sd-bus messages built by hand, to read logind's replies as systemd's logind sends them.
                "CSystemd",
            ]),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "LocalAuthClient", "LocalAuthProtocol", "LocalAuthStore", "LocalAuthCore", "LocalAuthTesting",
                "DescriptorPassing",
            ]),
        .testTarget(
            name: "LocalAuthenticationTests",
            dependencies: [
                "LocalAuthentication", "LocalAuthClient", "LocalAuthProtocol", "LocalAuthLocalization",
                "LocalAuthTesting", "LocalAuthCrypto",
            ]),
        // Written as code for Apple's platforms is written: it must compile unchanged.
        .testTarget(name: "AppleStyleTests", dependencies: ["LocalAuthentication"]),
    ]
)

// Our own targets fail on any compiler warning; the dependencies keep their own settings (SwiftPM
// gives a dependency's unsafe flags no effect, and these are set on this package's targets only).
// SwiftPM's note that pkg-config's `-pthread` (GLib's, for CLibfprint) is a "prohibited flag" is
// SwiftPM's, not the compiler's, and no flag makes it an error: the flag is dropped (glibc's libc
// has pthread since 2.34) and the note is printed once per build; it is the one `warning:` line
// a build may print.
for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-warnings-as-errors"])]
}
