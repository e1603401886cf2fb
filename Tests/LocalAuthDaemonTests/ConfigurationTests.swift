// SPDX-License-Identifier: Apache-2.0
import Glibc
import LocalAuthCore
import LocalAuthTesting
import Testing

@testable import LocalAuthDaemon

@Suite struct ConfigurationTests {
    @Test func parse_whenEmpty_givesDefaults() throws {
        let (config, warnings) = try DaemonConfiguration.parse("", file: "f")
        #expect(config == DaemonConfiguration())
        #expect(warnings.isEmpty)
    }

    @Test func parse_whenEveryKeyIsSet_readsThem() throws {
        let text = """
            # a comment
            finger-attempts = 3
            passcode-attempts=4   # trailing comment
            passcode-delays = 30s, 2m, 1h
            max-reuse-seconds = 120
            reader-linger-ms = -1
            enroll-timeout-seconds = 90
            idle-exit-seconds = 30
            log-level = debug
            external-reader-drivers = synaptics, elan-moc
            reader-share-seconds = 30
            password-after-restart = no
            password-max-age = 7d
            password-idle-max-age = off
            finger-idle-max-age = 90m
            password-for-first-session = no
            """
        let (c, warnings) = try DaemonConfiguration.parse(text, file: "f")
        #expect(warnings.isEmpty)
        #expect(
            c.lockout
                == LockoutConfig(
                    fingerAttempts: 3, passcodeAttempts: 4, passcodeDelays: [30, 120, 3600], maxReuseSeconds: 120))
        #expect(c.readerLingerMs == nil)
        #expect(c.enrollTimeoutMs == 90_000)
        #expect(c.idleExitSeconds == 30)
        #expect(c.logLevel == .debug)
        #expect(c.externalReaderDrivers == ["synaptics", "elan-moc"])
        #expect(c.readerShareMs == 30_000)
        #expect(
            c.passwordRules
                == PasswordRules(
                    afterRestart: false, maxAgeMs: 7 * 86_400_000, idlePasswordMs: nil, idleFingerMs: 5_400_000,
                    forFirstSession: false))
    }

    @Test func parse_whenKeyIsUnknown_warnsWithLineAndGoesOn() throws {
        let (c, warnings) = try DaemonConfiguration.parse(
            "finger-attempts = 4\nfinger-atempts = 9\n", file: "/etc/x.conf")
        #expect(c.lockout.fingerAttempts == 4)
        #expect(warnings == ["/etc/x.conf:2: unknown key 'finger-atempts' ignored"])
    }

    @Test(arguments: [
        ("finger-attempts = 0", 1, "finger-attempts: '0' is not a whole number from 1 to 20"),
        ("\n\nfinger-attempts = many", 3, "finger-attempts: 'many' is not a whole number from 1 to 20"),
        ("passcode-delays = 5m, 1m", 1, "passcode-delays: delays must not decrease"),
        ("passcode-delays = 2d", 1, "passcode-delays: '2d' is not a delay from 1s to 24h"),
        ("max-reuse-seconds = 301", 1, "max-reuse-seconds: '301' is not a whole number from 0 to 300"),
        ("idle-exit-seconds = -1", 1, "idle-exit-seconds: '-1' is not a whole number from 0 to 86400"),
        ("idle-exit-seconds = 5m", 1, "idle-exit-seconds: '5m' is not a whole number from 0 to 86400"),
        (
            "log-level = verbose", 1,
            "log-level: 'verbose' is not one of trace, debug, info, notice, warning, error, critical"
        ),
        (
            "external-reader-drivers = synaptics,,elan", 1,
            "external-reader-drivers: '' is not a libfprint driver name (lowercase letters, digits, _ and -)"
        ),
        (
            "external-reader-drivers = Synaptics", 1,
            "external-reader-drivers: 'Synaptics' is not a libfprint driver name (lowercase letters, digits, _ and -)"
        ),
        ("password-after-restart = off", 1, "password-after-restart: 'off' is not yes or no"),
        ("password-for-first-session = 1", 1, "password-for-first-session: '1' is not yes or no"),
        ("password-max-age = 48", 1, "password-max-age: '48' is not a time from 1m to 365d, or off"),
        ("password-max-age = 2y", 1, "password-max-age: '2y' is not a time from 1m to 365d, or off"),
        ("password-idle-max-age = 366d", 1, "password-idle-max-age: '366d' is not a time from 1m to 365d, or off"),
        ("finger-idle-max-age = off", 1, "finger-idle-max-age: 'off' is not a time from 1m to 365d"),
        ("finger-idle-max-age = -4h", 1, "finger-idle-max-age: '-4h' is not a time from 1m to 365d"),
        ("finger-attempts", 1, "expected 'key = value'"),
        ("finger-attempts =", 1, "'finger-attempts' has no value"),
        ("finger-attempts = 3\nfinger-attempts = 4", 2, "'finger-attempts' is set twice"),
    ])
    func parse_whenValueIsBad_refusesWithFileLineAndReason(text: String, line: Int, reason: String) {
        #expect(throws: DaemonConfiguration.Problem(file: "c.conf", line: line, reason: reason)) {
            try DaemonConfiguration.parse(text, file: "c.conf")
        }
    }

    @Test func load_whenNamedFileIsMissing_refuses() {
        #expect(throws: DaemonConfiguration.Problem.self) {
            try DaemonConfiguration.load(path: "/nonexistent/localauthd.conf", required: true)
        }
    }

    @Test func load_whenDefaultFileIsMissing_givesDefaults() throws {
        let (c, _) = try DaemonConfiguration.load(path: "/nonexistent/localauthd.conf", required: false)
        #expect(c == DaemonConfiguration())
    }

    /// Drop-ins are read after the file, by name across the directories, each over what came before;
    /// the administrator's directory masks a package's file of the same name.
    @Test func load_withDropIns_appliesThemByNameAndLetsTheLaterDirectoryMask() throws {
        let root = try TemporaryDirectory.make("la-conf")
        defer { TemporaryDirectory.remove(root) }
        let vendor = root + "/vendor.d"
        let admin = root + "/admin.d"
        mkdir(vendor, 0o755)
        mkdir(admin, 0o755)
        try Self.write(root + "/main.conf", "idle-exit-seconds = 30\nlog-level = notice\n")
        try Self.write(vendor + "/50-fprintd-compat.conf", "fprintd-compat = yes\n")
        try Self.write(vendor + "/60-idle.conf", "idle-exit-seconds = 60\n")
        try Self.write(vendor + "/ignored.txt", "this is = not read\n")
        try Self.write(admin + "/60-idle.conf", "")  // masks the package's file of that name
        try Self.write(admin + "/70-log.conf", "log-level = info\nvirtual-reader = yes\n")
        let (c, warnings) = try DaemonConfiguration.load(
            path: root + "/main.conf", required: true, dropInDirectories: [vendor, admin, root + "/absent.d"])
        #expect(warnings.isEmpty)
        #expect(c.fprintdCompat)
        #expect(c.idleExitSeconds == 30, "the masked drop-in is not read")
        #expect(c.logLevel == .info, "a later file wins")
        #expect(c.virtualReader)
        try Self.write(admin + "/80-bad.conf", "idle-exit-seconds = soon\n")
        #expect(throws: DaemonConfiguration.Problem.self) {
            try DaemonConfiguration.load(path: root + "/main.conf", required: true, dropInDirectories: [vendor, admin])
        }
    }

    /// The compat package's drop-in (packaging/fprintd-compat) turns on fprintd's API and nothing else.
    @Test func shippedFprintdCompatDropIn_turnsOnFprintdsAPIOnly() throws {
        let path =
            String(#filePath.dropLast("Tests/LocalAuthDaemonTests/ConfigurationTests.swift".count))
            + "packaging/fprintd-compat/50-fprintd-compat.conf"
        let (c, warnings) = try DaemonConfiguration.load(path: path, required: true)
        #expect(warnings.isEmpty)
        var expected = DaemonConfiguration()
        expected.fprintdCompat = true
        #expect(c == expected)
    }

    static func write(_ path: String, _ text: String) throws {
        guard let file = fopen(path, "w") else { throw HarnessError.setup("cannot write \(path)") }
        fputs(text, file)
        fclose(file)
    }

    /// The example installed as /etc/localauthd.conf states the defaults, and must stay valid.
    @Test func shippedExample_parsesToTheDefaults() throws {
        let path =
            String(#filePath.dropLast("Tests/LocalAuthDaemonTests/ConfigurationTests.swift".count))
            + "config/localauthd.conf"
        let (c, warnings) = try DaemonConfiguration.load(path: path, required: true)
        #expect(warnings.isEmpty)
        #expect(c == DaemonConfiguration())
    }
}

@Suite struct AuditLogTests {
    @Test func quoted_whenValueCarriesNewlinesAndQuotes_staysOneToken() {
        #expect(
            AuditLog.quoted("alice\naudit op=evaluate result=success")
                == "\"alice\\x0aaudit op=evaluate result=success\"")
        #expect(AuditLog.quoted("say \"hi\" \\ bye") == "\"say \\\"hi\\\" \\\\ bye\"")
        #expect(
            AuditLog.quoted(String(repeating: "a", count: 500)) == "\"" + String(repeating: "a", count: 200) + "…\"")
    }
}
