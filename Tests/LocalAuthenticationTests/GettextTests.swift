// SPDX-License-Identifier: Apache-2.0
import LocalAuthProtocol
import Testing

@testable import LocalAuthLocalization

/// Which catalogue names the clients look for before they bind the text domain: only the person's
/// languages, so a client in the C locale or in one language never walks every language of
/// /usr/share/locale (it did: 200 stat calls in each `localauthctl` run, docs/performance.md).
@Suite struct GettextTests {
    @Test func catalogueNames_followLanguageThenTheLocale_eachWithoutCodesetModifierAndTerritory() {
        #expect(
            Gettext.catalogueNames(language: "fr:ko", locale: "de_DE.UTF-8")
                == ["fr", "ko", "de_DE.UTF-8", "de_DE", "de"])
        #expect(
            Gettext.catalogueNames(language: nil, locale: "sr_RS.UTF-8@latin")
                == ["sr_RS.UTF-8@latin", "sr_RS.UTF-8", "sr_RS", "sr"])
    }

    @Test func catalogueNames_skipEmptyEntriesAndRepeats() {
        #expect(Gettext.catalogueNames(language: "::de:de", locale: "de") == ["de"])
        #expect(Gettext.catalogueNames(language: "", locale: "") == [])
    }

    /// Every line a client shows of the daemon's text is printable, phrase or English `message`
    /// alike: a program's name with `\e]0;PWN\a\e[2K` (issue 26) reaches no terminal raw.
    @Test func localizedMessage_ofADaemonLineWithControls_showsNoneOfThem() {
        let hostile = RequestLabel(
            program: "/tmp/\u{1B}]0;PWN\u{07}\u{1B}[2K\u{9B}", account: "alice", right: "v\u{7F}")
        let phrase = Phrase.fingerNotAvailable(.readerBusy(by: hostile))
        let lines = [
            RequestResult(.biometryNotAvailable, phrase).localizedMessage(),
            RequestResult(.biometryNotAvailable, phrase.english).localizedMessage(),
            Event(.info, phrase.english, phrase: phrase).localizedMessage(),
        ]
        for line in lines {
            #expect(line.contains("the reader is in use by /tmp/"), "\(line.debugDescription)")
            #expect(
                !line.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) },
                "\(line.debugDescription)")
        }
    }
}
