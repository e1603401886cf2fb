// SPDX-License-Identifier: Apache-2.0
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
}
