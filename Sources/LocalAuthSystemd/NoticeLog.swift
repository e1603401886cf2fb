// SPDX-License-Identifier: Apache-2.0
// libsystemd, confined: this target is the only one that imports CSystemd (sd-daemon, sd-journal,
// sd-login, sd-bus); Tests/LocalAuthDaemonTests/ArchitectureTests.swift fails on any other.

/// Where the systemd glue reports what an administrator should know: the daemon's audit log.
public protocol NoticeLog: Sendable {
    /// Something went wrong or changed that an administrator should see.
    func notice(_ message: String)
    /// A step of the daemon's life worth a line at the default level (sleep and resume).
    func info(_ message: String)
    /// Detail for `log-level = debug`.
    func debug(_ message: String)
}
