# SPDX-License-Identifier: Apache-2.0
#
# The catalogue of every line a person reads (text domain "localauth"), included by the
# top-level Makefile. The .pot is generated from the sources: xgettext over the C module (N_)
# and the Swift clients (tr, trn: Translator.tr and LocalAuthLocalization's tr). Each po/LANG.po
# is compiled with msgfmt into .build/share/locale/LANG/LC_MESSAGES/localauth.mo, where the
# build's clients find it, and installed under $(PREFIX)/share/locale.

PO_LANGS := $(shell sed -e 's/\#.*//' po/LINGUAS)
PO_DOMAIN := localauth
PO_POT := .build/po/$(PO_DOMAIN).pot
PO_BUILD_LOCALEDIR := .build/share/locale
PO_MO := $(foreach l,$(PO_LANGS),$(PO_BUILD_LOCALEDIR)/$(l)/LC_MESSAGES/$(PO_DOMAIN).mo)
# Every source file that marks a line (tests and fixtures excluded).
PO_OPEN := (
PO_MARK := '(^|[^A-Za-z0-9_])(tr|trn|N_|said)[$(PO_OPEN)]'
PO_SOURCES = $(shell grep -lE $(PO_MARK) $$(find Sources pam -maxdepth 2 -name '*.swift' -o -maxdepth 2 \
                 -name '*.[ch]' -not -path 'pam/tests/*' | sort))
PO_XGETTEXT := xgettext --language=C --from-code=UTF-8 --keyword=tr --keyword=trn:1,2 --keyword=N_ --keyword=said \
               --add-comments=TRANSLATORS: --package-name=localauth --package-version=0.1.0 \
               --msgid-bugs-address=localauth --sort-by-file
LOCALEDIR ?= $(PREFIX)/share/locale

.PHONY: locale pot po-update check-translations check-catalogued locale-install locale-uninstall \
        test-locales

locale: $(PO_MO)

$(PO_BUILD_LOCALEDIR)/%/LC_MESSAGES/$(PO_DOMAIN).mo: po/%.po
	@mkdir -p $(@D)
	msgfmt --check --output-file=$@ $<

pot: $(PO_POT)

$(PO_POT): $(PO_SOURCES) po/po.mk
	@scripts/ensure-deps.sh
	@mkdir -p $(@D)
	$(PO_XGETTEXT) --output=$@ $(PO_SOURCES)

# The translator's step: brings every po/LANG.po up to the sources (new lines empty, changed
# ones fuzzy), then translate what `make check-translations` lists.
po-update: $(PO_POT)
	for l in $(PO_LANGS); do msgmerge --quiet --update --backup=none po/$$l.po $(PO_POT); done

# Every line of the .pot translated in each shipped language, nothing fuzzy or left over, and the
# conversions (%s, %d, …) the same in each translation as in the English (scripts/check-translations.py;
# msgfmt --check too). Fails the build when a new line is not translated.
check-translations: $(PO_POT)
	/usr/bin/python3 scripts/check-translations.py --pot $(PO_POT) $(addprefix po/,$(addsuffix .po,$(PO_LANGS)))
	/usr/bin/python3 scripts/check-translations.py --self-test

# Every string literal that reads as words, in the components that show text to a person, is
# marked for the catalogue or says why it stays English (scripts/check-catalogued.py; its
# self-test plants an unmarked line in Swift and in C). In `make test` and `make lint`.
check-catalogued:
	/usr/bin/python3 scripts/check-catalogued.py
	/usr/bin/python3 scripts/check-catalogued.py --self-test

locale-install: locale
	for l in $(PO_LANGS); do \
		install -d -m 0755 $(DESTDIR)$(LOCALEDIR)/$$l/LC_MESSAGES; \
		install -m 0644 $(PO_BUILD_LOCALEDIR)/$$l/LC_MESSAGES/$(PO_DOMAIN).mo \
			$(DESTDIR)$(LOCALEDIR)/$$l/LC_MESSAGES/$(PO_DOMAIN).mo; \
	done

# Removes the catalogues; the language directories stay (other packages share them).
locale-uninstall:
	for l in $(PO_LANGS); do rm -f $(DESTDIR)$(LOCALEDIR)/$$l/LC_MESSAGES/$(PO_DOMAIN).mo; done

# The locales the language tests run in, built with localedef from Debian's `locales` sources
# into a private directory (LOCPATH for ordinary programs; the PAM tests lay it over
# /usr/lib/locale inside their private mount namespace, for setuid sudo). /etc/locale.gen and
# the machine's locale archive are never changed.
TEST_LOCALES := de_DE ko_KR zh_CN fr_FR
TEST_LOCPATH := .build/test-locales

test-locales: $(foreach l,$(TEST_LOCALES),$(TEST_LOCPATH)/$(l).utf8/LC_MESSAGES/SYS_LC_MESSAGES)

$(TEST_LOCPATH)/%.utf8/LC_MESSAGES/SYS_LC_MESSAGES:
	@scripts/ensure-deps.sh
	@mkdir -p $(TEST_LOCPATH)
	localedef --no-archive -i $* -f UTF-8 $(TEST_LOCPATH)/$*.utf8 || test -f $@
