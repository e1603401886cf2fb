// SPDX-License-Identifier: Apache-2.0
import LocalAuthProtocol
import Testing

/// The catalogue's templates (C's printf syntax) filled without printf: what a translation may do, and
/// what a damaged catalogue cannot do (trap, or read past the arguments).
@Suite struct TranslationTests {
    @Test func fill_inOrder() {
        #expect(Template.fill("Password or finger for %s: ", ["alice"]) == "Password or finger for alice: ")
        #expect(Template.fill("stage %d of %d", [3, 5]) == "stage 3 of 5")
        #expect(Template.fill("%lld, %zu, %u, %i", [1, 2, 3, 4]) == "1, 2, 3, 4")
    }

    @Test func fill_positional_letsATranslationReorder() {
        #expect(Template.fill("%2$d단계 중 %1$d단계", [3, 5]) == "5단계 중 3단계")
        #expect(Template.fill("%2$s %1$s %2$s", ["a", "b"]) == "b a b")
    }

    @Test func fill_precision_cutsText() {
        #expect(Template.fill("from %.3s!", ["abcdef"]) == "from abc!")
    }

    @Test func fill_percentSign_andUnknownConversions_stayAsWritten() {
        #expect(Template.fill("100%% sure", []) == "100% sure")
        #expect(Template.fill("%x and %q and 50%", [1]) == "%x and %q and 50%")
    }

    @Test func fill_damagedTemplate_neverTrapsOrReadsPastTheArguments() {
        #expect(Template.fill("%s %s %9$s %0$s", ["only"]) == "only   ")
        #expect(Template.fill("%99999999999999999999$s", ["x"]) == "")
        #expect(Template.fill("%", []) == "%")
        #expect(Template.fill("%.", []) == "%.")
    }

    @Test func english_isTheMsgid_andPluralByCount() {
        let t = EnglishText()
        #expect(t.tr("Wrong passcode") == "Wrong passcode")
        #expect(t.trn("%d try left", "%d tries left", 1, 1) == "1 try left")
        #expect(t.trn("%d try left", "%d tries left", 2, 2) == "2 tries left")
        #expect(t.trn("%d try left", "%d tries left", 0, 0) == "0 tries left")
    }
}
