// SPDX-License-Identifier: Apache-2.0
import FingerprintReader
import LocalAuthProtocol
import Testing

@testable import LocalAuthDaemon
@testable import LocalAuthFprintdDoor
@testable import LocalAuthSystemd

/// The fprintd door's pure parts: how the daemon's results and events become fprintd's names, what
/// polkit's answer proves, which polkit actions each method needs, how the daemon finds systemd's
/// directories. The door itself is tested on the real bus (Tests/fprintd).
@Suite struct FprintdVocabularyTests {
    @Test(arguments: [
        (ResultCode.success, "verify-match"),
        (.authenticationFailed, "verify-no-match"),
        (.biometryLockout, "verify-no-match"),
        (.userCancel, "verify-no-match"),
        (.timedOut, "verify-no-match"),
        (.systemCancel, "verify-unknown-error"),
        (.internalError, "verify-unknown-error"),
        (.busy, "verify-unknown-error"),
    ])
    func verifyResultName_mapsEachResultAsFprintdDoes(code: ResultCode, name: String) {
        #expect(Fprintd.verifyResultName(Answer(code, english: "")) == name)
    }

    /// fprintd's `verify_result_to_name`: a protocol error is "disconnected", an unplugged reader an
    /// unknown error, a print the reader does not hold a no-match, a full storage "data-full".
    @Test func resultNames_forReaderFailures_areFprintds() {
        func failed(_ error: ReaderFailure) -> Answer { error.answer }
        #expect(Fprintd.verifyResultName(failed(.communication)) == "verify-disconnected")
        #expect(Fprintd.enrollResultName(failed(.communication)) == "enroll-disconnected")
        #expect(Fprintd.verifyResultName(failed(.removed)) == "verify-unknown-error")
        #expect(Fprintd.enrollResultName(failed(.removed)) == "enroll-unknown-error")
        #expect(Fprintd.verifyResultName(failed(.dataNotFound)) == "verify-no-match")
        #expect(Fprintd.enrollResultName(failed(.dataFull)) == "enroll-data-full")
        #expect(Fprintd.verifyResultName(failed(.other("GENERAL"))) == "verify-unknown-error")
        // The door reads the failure's type, never its words: a message that names a failure is none.
        let worded = Answer(.biometryNotAvailable, .readerFailed(ReaderFailure.communication.english))
        #expect(Fprintd.verifyResultName(worded) == "verify-unknown-error")
    }

    @Test(arguments: [
        (ResultCode.success, "enroll-completed"),
        (.userCancel, "enroll-failed"),
        (.timedOut, "enroll-failed"),
        (.internalError, "enroll-failed"),
        (.alreadyEnrolled, "enroll-duplicate"),
        (.systemCancel, "enroll-unknown-error"),
        (.busy, "enroll-unknown-error"),
    ])
    func enrollResultName_mapsEachResultAsFprintdDoes(code: ResultCode, name: String) {
        #expect(Fprintd.enrollResultName(Answer(code, english: "")) == name)
    }

    @Test func retryNames_followTheHint() {
        #expect(Fprintd.verifyRetryName(.tooShort) == "verify-swipe-too-short")
        #expect(Fprintd.verifyRetryName(.centerFinger) == "verify-finger-not-centered")
        #expect(Fprintd.verifyRetryName(.removeFinger) == "verify-remove-and-retry")
        #expect(Fprintd.verifyRetryName(nil) == "verify-retry-scan")
        #expect(Fprintd.enrollRetryName(.general) == "enroll-retry-scan")
        #expect(Fprintd.enrollRetryName(.tooShort) == "enroll-swipe-too-short")
    }

    @Test func fingerArgument_readsFprintdsNames() {
        #expect(Fprintd.FingerArgument("") == .any)
        #expect(Fprintd.FingerArgument("any") == .any)
        #expect(Fprintd.FingerArgument("left-little-finger") == .finger(.leftLittle))
        #expect(Fprintd.FingerArgument("Left-Thumb") == .invalid)
        #expect(Fprintd.FingerArgument(String(repeating: "x", count: 100_000)) == .invalid)
    }

    /// One table (`FprintdDevice.methods`) gives the served interface, the claim each call needs, the
    /// account it names and what it does: fprintd's ten Device methods, each once.
    @Test func methodTable_isFprintdsDeviceInterface() {
        let members = FprintdDevice.methods.map(\.member)
        #expect(Set(members).count == 10 && members.count == 10)
        #expect(FprintdDevice.method("Claim")?.claim == .unclaimed)
        #expect(FprintdDevice.method("DeleteEnrolledFingers")?.claim == .autoClaim)
        #expect(FprintdDevice.method("ListEnrolledFingers")?.claim == .anytime)
        #expect(FprintdDevice.method("VerifyStart")?.claim == .claimed)
        let naming = FprintdDevice.methods.filter { $0.account != nil }.map(\.member).sorted()
        #expect(naming == ["Claim", "DeleteEnrolledFingers", "ListEnrolledFingers"])
        #expect(FprintdDevice.method("Claim")?.account == .claimReader)
        #expect(FprintdDevice.method("GetDevices") == nil)
    }

    @Test func actions_areFprintdsPermissionTable() {
        #expect(FprintdDevice.actions(for: "Claim") == [.verify, .enroll])
        #expect(FprintdDevice.actions(for: "VerifyStart") == [.verify])
        #expect(FprintdDevice.actions(for: "ListEnrolledFingers") == [.verify])
        for method in ["EnrollStart", "DeleteEnrolledFinger", "DeleteEnrolledFingers", "DeleteEnrolledFingers2"] {
            #expect(FprintdDevice.actions(for: method) == [.enroll], "\(method)")
        }
        for method in ["Release", "VerifyStop", "EnrollStop"] {
            #expect(FprintdDevice.actions(for: method).isEmpty, "\(method)")
        }
    }

    @Test func polkitAnswer_provesAuthenticationOnlyWithAKeptAuthorisation() throws {
        func reply(_ authorized: Bool, _ details: [String: String]) -> [BusValue] {
            [
                .structure([
                    .bool(authorized), .bool(false),
                    .array(
                        element: "{ss}", details.map { .dictEntry(.string($0.key), .string($0.value)) }),
                ])
            ]
        }
        let typed = try #require(PolkitAnswer(reply: reply(true, ["polkit.temporary_authorization_id": "tmpauthz3"])))
        #expect(typed.isAuthorized && typed.provesAuthentication)
        let yes = try #require(PolkitAnswer(reply: reply(true, [:])))
        #expect(yes.isAuthorized && !yes.provesAuthentication)
        let no = try #require(
            PolkitAnswer(
                reply: reply(false, ["polkit.temporary_authorization_id": "tmpauthz3", "polkit.dismissed": "true"])))
        #expect(!no.provesAuthentication)
        #expect(PolkitAnswer(reply: [.string("nonsense")]) == nil)
    }

    @Test func polkitArguments_nameTheSenderAsSystemBusNameAndAllowInteraction() {
        let arguments = Polkit.arguments(sender: ":1.42", action: "net.reactivated.fprint.device.enroll")
        #expect(arguments.map(\.signature).joined() == "(sa{sv})sa{ss}us")
        #expect(
            arguments[0]
                == .structure([
                    .string("system-bus-name"),
                    .array(element: "{sv}", [.dictEntry(.string("name"), .variant(.string(":1.42")))]),
                ]))
        #expect(arguments[3] == .uint32(1))
    }

    @Test func introspection_listsFprintdsPropertyNamesWithTheirDashes() {
        let xml = BusInterface(
            name: "net.reactivated.Fprint.Device", methods: [.init(member: "Claim", signature: "s", result: "")],
            signals: [.init(member: "VerifyStatus", signature: "sb")],
            properties: [.init(member: "num-enroll-stages", signature: "i")], handle: { _ in }, property: { _ in nil }
        ).introspection
        #expect(xml.contains("<property name=\"num-enroll-stages\" type=\"i\" access=\"read\"/>"))
        #expect(xml.contains("<signal name=\"VerifyStatus\">\n      <arg type=\"s\"/>\n      <arg type=\"b\"/>"))
        #expect(BusInterface.split("asa{sv}(bba{ss})s") == ["as", "a{sv}", "(bba{ss})", "s"])
    }

    @Test func systemdDirectories_fillWhatTheCommandLineLeftOut() throws {
        let env = ["STATE_DIRECTORY": "/var/lib/fprint:/other", "RUNTIME_DIRECTORY": "/run/fprint"]
        let filled = try DaemonOptions(arguments: ["--fprintd-compat"]).withSystemdDirectories { env[$0] }
        #expect(filled.stateDirectory == "/var/lib/fprint")
        #expect(filled.socketPath == "/run/fprint/socket")
        #expect(filled.fprintdCompat)
        let given = try DaemonOptions(arguments: ["--state-dir", "/srv/s", "--socket", "/srv/sock"])
            .withSystemdDirectories { env[$0] }
        #expect(given.stateDirectory == "/srv/s" && given.socketPath == "/srv/sock")
        let relative = try DaemonOptions(arguments: []).withSystemdDirectories { _ in "relative/dir" }
        #expect(relative.stateDirectory == "/var/lib/localauthd")
    }

    @Test func firstStartImport_isTheSystemInstances_orNamedByTheConfiguration() throws {
        // A test's or a second instance's daemon never reads the machine's /var/lib/fprint unasked.
        let system = try DaemonOptions(arguments: []).withSystemdDirectories { _ in nil }
        let unit = try DaemonOptions(arguments: []).withSystemdDirectories {
            ["STATE_DIRECTORY": "/var/lib/localauthd"][$0]
        }
        let own = try DaemonOptions(arguments: ["--state-dir", "/tmp/t"])
        let suite = try DaemonOptions(arguments: []).withSystemdDirectories { ["STATE_DIRECTORY": "/tmp/fprint"][$0] }
        let plain = DaemonConfiguration()
        let named = try DaemonConfiguration.parse("fprintd-state-dir = /tmp/old", file: "f").0
        #expect(Daemon.importsFprintdPrintsAtFirstStart(system, plain))
        #expect(Daemon.importsFprintdPrintsAtFirstStart(unit, plain))
        #expect(!Daemon.importsFprintdPrintsAtFirstStart(own, plain))
        #expect(!Daemon.importsFprintdPrintsAtFirstStart(suite, plain))
        #expect(Daemon.importsFprintdPrintsAtFirstStart(own, named))
    }

    @Test func configuration_fprintdCompat_isYesOrNo() throws {
        #expect(try DaemonConfiguration.parse("fprintd-compat = yes", file: "f").0.fprintdCompat)
        #expect(!(try DaemonConfiguration.parse("fprintd-compat = no", file: "f").0.fprintdCompat))
        #expect(throws: DaemonConfiguration.Problem.self) {
            try DaemonConfiguration.parse("fprintd-compat = 1", file: "f")
        }
    }
}
