// SPDX-License-Identifier: Apache-2.0
import LocalAuthDaemon
import LocalAuthSocketDoor
import Testing

/// `--connection-idle-ms` exists for tests; without it a connection may idle 30 s.
@Suite struct ConnectionIdleOptionTests {
    @Test func idleTimeout_byDefault_isThirtySeconds() throws {
        #expect(Server.Limits().idleTimeoutMs == 30_000)
        #expect(try DaemonOptions(arguments: ["--socket", "/tmp/s"]).connectionIdleMsOverride == nil)
    }

    @Test func connectionIdleMs_whenGiven_overridesTheDefault() throws {
        let o = try DaemonOptions(arguments: ["--connection-idle-ms", "500"])
        #expect(o.connectionIdleMsOverride == 500)
    }

    @Test(arguments: ["0", "-5", "soon"])
    func connectionIdleMs_whenNotAPositiveNumber_isRefused(value: String) {
        #expect(throws: DaemonOptions.ParseError.badValue("--connection-idle-ms", value)) {
            try DaemonOptions(arguments: ["--connection-idle-ms", value])
        }
    }
}
