// SPDX-License-Identifier: Apache-2.0
import LocalAuthTesting

extension DaemonHarness {
    /// A daemon with a virtual reader on which alice's right index finger is enrolled as the print
    /// `alice-1`: where most tests of evaluation start.
    static func withAlicesFinger() async throws -> DaemonHarness {
        let d = try DaemonHarness()
        try await d.enroll(user: "alice", printID: "alice-1")
        return d
    }
}
