// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthTesting
import Testing

/// localauthctl against the real daemon in the person's language: the catalogues `make locale` built
/// (.build/share/locale, found beside the binary as an installed one finds $(PREFIX)/share/locale) and the
/// locales `make test-locales` built with localedef (LOCPATH; nothing on the machine changes).
@Suite(.onOwnThreads, .serialized) struct LanguageTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static let locpath = root + "/.build/test-locales"

    static func language(_ lang: String, _ extra: [String: String] = [:]) throws -> [String: String] {
        guard FileManager.default.fileExists(atPath: locpath + "/de_DE.utf8/LC_CTYPE"),
            FileManager.default.fileExists(atPath: root + "/.build/share/locale/de/LC_MESSAGES/localauth.mo")
        else {
            throw HarnessError.setup("no test locales or catalogues: run make locale test-locales")
        }
        return ["LANG": lang, "LOCPATH": locpath].merging(extra) { $1 }
    }

    @Test func status_inGerman_printsGermanLines() throws {
        let daemon = try DaemonHarness()
        defer { _ = daemon.stop() }
        let r = try daemon.ctl(["status", "--user", "root"], environment: try Self.language("de_DE.UTF-8"))
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.contains("Leser vorhanden: ja"), "\(r.out)")
        #expect(r.out.contains("Biometrie gesperrt: nein"), "\(r.out)")
        #expect(r.out.contains("Code festgelegt: nein"), "\(r.out)")
    }

    @Test func status_inKorean_printsKoreanLines() throws {
        let daemon = try DaemonHarness()
        defer { _ = daemon.stop() }
        let r = try daemon.ctl(["status", "--user", "root"], environment: try Self.language("ko_KR.UTF-8"))
        #expect(r.out.contains("인식기 있음: 예"), "\(r.out)")
    }

    @Test func unreachableDaemon_inChinese_saysSoInChinese() throws {
        let daemon = try DaemonHarness()
        defer { _ = daemon.stop() }
        let r = try daemon.ctl(
            ["list", "--socket", daemon.directory + "/nothing"], environment: try Self.language("zh_CN.UTF-8"))
        #expect(r.status == 4)
        #expect(r.err.contains("无法连接位于 \(daemon.directory)/nothing 的 localauthd"), "\(r.err)")
    }

    @Test func languageList_takesTheFirstLanguageWithACatalogue() throws {
        let daemon = try DaemonHarness()
        defer { _ = daemon.stop() }
        // gettext's LANGUAGE: French has no catalogue, Korean has; LANG only has to name a locale.
        let r = try daemon.ctl(
            ["status", "--user", "root"], environment: try Self.language("de_DE.UTF-8", ["LANGUAGE": "fr:ko"]))
        #expect(r.out.contains("인식기 있음: 예"), "\(r.out)")
    }

    @Test func lcAll_overridesLang_andLcMessages() throws {
        let daemon = try DaemonHarness()
        defer { _ = daemon.stop() }
        let r = try daemon.ctl(
            ["status", "--user", "root"],
            environment: try Self.language("ko_KR.UTF-8", ["LC_MESSAGES": "ko_KR.UTF-8", "LC_ALL": "de_DE.UTF-8"]))
        #expect(r.out.contains("Leser vorhanden: ja"), "\(r.out)")
    }

    @Test func localeWithoutCatalogue_orNotInstalled_staysEnglish() throws {
        let daemon = try DaemonHarness()
        defer { _ = daemon.stop() }
        for lang in ["fr_FR.UTF-8", "xx_YY.UTF-8", "C.UTF-8"] {
            let r = try daemon.ctl(["status", "--user", "root"], environment: try Self.language(lang))
            #expect(r.out.contains("reader present: yes"), "\(lang): \(r.out) \(r.err)")
        }
    }

    @Test func help_inGerman_isGerman() throws {
        let daemon = try DaemonHarness()
        defer { _ = daemon.stop() }
        let r = try daemon.ctl(["--help"], environment: try Self.language("de_DE.UTF-8"))
        #expect(r.out.contains("Finger registrieren und localauthd verwalten."), "\(r.out)")
        #expect(r.out.contains("Rückgabewerte:"), "\(r.out)")
    }

    /// The daemon's own answer (a phrase on the wire) in the client's language, not the daemon's:
    /// the same daemon answers German and Korean clients at once, and an English one in English.
    @Test func daemonAnswer_isRenderedInEachClientsLanguage() throws {
        try Self.expectEachClient(
            ["verify", "--user", "root", "--timeout", "5"], succeeds: false,
            reads: [
                "de_DE.UTF-8": "Für diesen Benutzer ist kein Fingerabdruck registriert",
                "ko_KR.UTF-8": "이 사용자에게 등록된 지문이 없음",
                "zh_CN.UTF-8": "此用户未录入指纹",
                "C.UTF-8": "No fingerprint is enrolled for this user",
            ])
    }

    /// A management answer (a catalogue line with arguments, `Phrase.said`) in the client's language.
    @Test func managementAnswer_isRenderedInTheClientsLanguage() throws {
        try Self.expectEachClient(
            ["lockout", "reset", "--user", "root"], succeeds: true,
            reads: [
                "de_DE.UTF-8": "Sperren und Wiederverwendungsfenster von root aufgehoben",
                "ko_KR.UTF-8": "root의 잠금과 재사용 기간을 초기화함",
                "zh_CN.UTF-8": "已清除 root 的锁定和重用时间窗口",
                "C.UTF-8": "Lockouts and reuse windows of root cleared",
            ])
    }

    /// One daemon runs `arguments` for a client in each language of `expected`; each client reads
    /// its line, on standard output when the command succeeds, else on standard error.
    static func expectEachClient(
        _ arguments: [String], succeeds: Bool, reads expected: [String: String],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let daemon = try DaemonHarness()
        defer { _ = daemon.stop() }
        for (lang, line) in expected {
            let r = try daemon.ctl(arguments, environment: try language(lang))
            #expect((r.status == 0) == succeeds, "\(lang): \(r.err)", sourceLocation: sourceLocation)
            #expect(
                (succeeds ? r.out : r.err).contains(line), "\(lang): \(r.out)\(r.err)", sourceLocation: sourceLocation)
        }
    }
}
