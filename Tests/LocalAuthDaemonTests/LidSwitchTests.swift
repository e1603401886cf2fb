// SPDX-License-Identifier: Apache-2.0
import Glibc
import LocalAuthTesting
import Testing

@testable import LocalAuthSystemd

/// The ACPI lid button's state files, read where logind cannot be asked.
@Suite struct LidSwitchTests {
    static func lidDirectory(_ states: [String: String]) throws -> String {
        let dir = try TemporaryDirectory.make("la-lid")
        for (name, state) in states {
            mkdir(dir + "/" + name, 0o755)
            let fd = open(dir + "/" + name + "/state", O_WRONLY | O_CREAT, 0o644)
            _ = state.withCString { write(fd, $0, strlen($0)) }
            close(fd)
        }
        return dir
    }

    @Test func closed_whenTheLidSaysClosed_isTrue() throws {
        let dir = try Self.lidDirectory(["LID0": "state:      closed\n"])
        #expect(LidSwitch.closed(directory: dir))
    }

    @Test func closed_whenTheLidSaysOpen_isFalse() throws {
        let dir = try Self.lidDirectory(["LID0": "state:      open\n"])
        #expect(!LidSwitch.closed(directory: dir))
    }

    @Test func closed_whenAnyOfTwoLidsIsClosed_isTrue() throws {
        let dir = try Self.lidDirectory(["LID0": "state:      open\n", "LID1": "state:      closed\n"])
        #expect(LidSwitch.closed(directory: dir))
    }

    @Test func closed_withoutALid_isFalse() {
        #expect(!LidSwitch.closed(directory: "/nonexistent/acpi/button/lid"))
    }
}
