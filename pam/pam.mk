# SPDX-License-Identifier: Apache-2.0
#
# pam_localauth.so, its tests and fuzzers. Included by the top-level Makefile
# (`include pam/pam.mk`); also usable alone: `make -f pam/pam.mk pam-test-unit`.
# Paths are relative to the repository root. Built with cc, never SwiftPM: the module must not
# drag the Swift runtime into sudo.

# Keep whatever default goal the including Makefile has (restored at the end).
PAM_SAVED_DEFAULT_GOAL := $(.DEFAULT_GOAL)

PAM_CC ?= cc
PAM_FUZZ_CC ?= /opt/swift/usr/bin/clang
PAM_PYTHON ?= /usr/bin/python3
PAM_CLANG_FORMAT ?= clang-format
# Seconds per fuzz target for pam-fuzz.
PAM_FUZZ_SECONDS ?= 60
# Where the integration tests find localauthd and localauthctl.
PAM_DAEMON_BIN ?= .build/debug

PAM_BUILD := pam/build
PAM_MODULE := $(PAM_BUILD)/pam_localauth.so
PAM_ASAN_MODULE := $(PAM_BUILD)/asan/pam_localauth.so
PAM_GOLDEN := Tests/Fixtures/protocol/golden.txt
PAM_VOCABULARY := Tests/Fixtures/protocol/vocabulary.txt

PAM_CORE_SRCS := pam/wire.c pam/options.c pam/codes.c pam/rules.c pam/phrases.c pam/catalogue.c pam/fill.c
PAM_SRCS := pam/pam_localauth.c pam/exchange.c pam/conversation.c pam/socket.c pam/session.c pam/terminal.c $(PAM_CORE_SRCS)
PAM_HDRS := pam/module.h pam/catalogue.h pam/fill.h pam/wire.h pam/options.h pam/codes.h pam/rules.h pam/terminal.h pam/messages.h pam/phrases.h
PAM_TEST_SRCS := pam/tests/unit.c pam/tests/test_wire.c pam/tests/test_options.c \
                 pam/tests/test_codes.c pam/tests/test_exports.c pam/tests/test_rules.c \
                 pam/tests/test_phrases.c \
                 pam/tests/test_vocabulary.c
PAM_FUZZ_TARGETS := fuzz_wire fuzz_options
PAM_BENCH_CLIENT := $(PAM_BUILD)/tests/bench_client
PAM_STEP_CLIENT := $(PAM_BUILD)/tests/step_client
PAM_FAILINJECT := $(PAM_BUILD)/tests/libfailinject.so
PAM_PROBE := $(PAM_BUILD)/tests/probe_module.so
# Kills of the daemon in pam-test-death (docs/reliability.md, promise 1).
PAM_DEATH_KILLS ?= 100

# Installation. PREFIX and DESTDIR come from the top-level Makefile (or the command line).
# libpam loads modules named without a path from its own directory, /lib/<multiarch>/security
# on Debian (libpam-modules and libpam-fprintd install there; /lib is /usr/lib with merged
# /usr), whatever PREFIX is. The same for pam-auth-update's profiles: /usr/share/pam-configs.
PREFIX ?= /usr/local
DESTDIR ?=
ifeq ($(origin PAM_MULTIARCH),undefined)
PAM_MULTIARCH := $(shell m=$$(gcc -print-multiarch 2>/dev/null); \
                   [ -n "$$m" ] || m=$$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null); \
                   echo "$$m")
endif
PAM_SECURITYDIR ?= /lib/$(PAM_MULTIARCH)/security
PAM_CONFIGSDIR ?= /usr/share/pam-configs
PAM_MAN8DIR ?= $(PREFIX)/share/man/man8
PAM_EXAMPLESDIR ?= $(PREFIX)/share/doc/localauth/pam-examples
PAM_EXAMPLES := README.md gdm-fingerprint hyprlock i3lock kde login polkit-1 su sudo swaylock

# Where the module finds its catalogues (po/, text domain "localauth"): $(PREFIX)/share/locale,
# where `make install` puts them. A change of it rebuilds the module (the stamp below).
PAM_LOCALEDIR ?= $(PREFIX)/share/locale
PAM_LOCALEDIR_STAMP := $(PAM_BUILD)/localedir.stamp

PAM_WARN := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wstrict-prototypes -Wvla
PAM_CFLAGS := -std=gnu11 -O2 $(PAM_WARN) -fPIC -fvisibility=hidden -D_FORTIFY_SOURCE=2 \
              -fstack-protector-strong -DLA_LOCALEDIR='"$(PAM_LOCALEDIR)"'
PAM_LDFLAGS := -shared -Wl,-z,relro,-z,now -Wl,-z,noexecstack -Wl,--no-undefined \
               -Wl,--version-script=pam/export.map
PAM_LIBS := -lpam
PAM_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
PAM_ASAN_CFLAGS := -std=gnu11 -O1 -g $(PAM_WARN) -fPIC -fvisibility=hidden $(PAM_SAN) \
                   -DLA_LOCALEDIR='"$(PAM_LOCALEDIR)"'

.PHONY: pam pam-asan pam-test-unit pam-fuzz pam-lint pam-clean pam-test-integration \
        pam-test-asan pam-format pam-bench pam-install pam-uninstall pam-test-install \
        pam-test-locker pam-test-death pam-test-memcheck pam-test-failinject pam-test-hostile \
        pam-test-terminal pam-test-stacks pam-test-keyring

pam: $(PAM_MODULE)

pam-asan: $(PAM_ASAN_MODULE)

# Rewritten only when PAM_LOCALEDIR changes, so that `make install PREFIX=/usr` after a `make`
# for /usr/local rebuilds the module for the catalogues' new place.
$(PAM_LOCALEDIR_STAMP): FORCE
	@mkdir -p $(@D)
	@[ "$$(cat $@ 2>/dev/null)" = "$(PAM_LOCALEDIR)" ] || echo "$(PAM_LOCALEDIR)" > $@

.PHONY: FORCE
FORCE:

$(PAM_MODULE): $(PAM_SRCS) $(PAM_HDRS) pam/export.map pam/pam.mk $(PAM_LOCALEDIR_STAMP)
	@mkdir -p $(@D)
	$(PAM_CC) $(PAM_CFLAGS) $(PAM_LDFLAGS) -o $@ $(PAM_SRCS) $(PAM_LIBS)

$(PAM_ASAN_MODULE): $(PAM_SRCS) $(PAM_HDRS) pam/export.map pam/pam.mk $(PAM_LOCALEDIR_STAMP)
	@mkdir -p $(@D)
	$(PAM_CC) $(PAM_ASAN_CFLAGS) -shared -Wl,-z,relro,-z,now \
		-Wl,--version-script=pam/export.map -o $@ $(PAM_SRCS) $(PAM_LIBS)

# The unit tests themselves run under ASan and UBSan.
$(PAM_BUILD)/tests/unit: $(PAM_TEST_SRCS) $(PAM_CORE_SRCS) $(PAM_HDRS) pam/tests/harness.h \
                         Tests/Fixtures/protocol/phrases.txt
	@mkdir -p $(@D)
	$(PAM_CC) -std=gnu11 -O1 -g $(PAM_WARN) $(PAM_SAN) -o $@ $(PAM_TEST_SRCS) \
		$(PAM_CORE_SRCS) -ldl

pam-test-unit: $(PAM_BUILD)/tests/unit $(PAM_MODULE)
	$(PAM_BUILD)/tests/unit $(PAM_GOLDEN) $(PAM_VOCABULARY) $(PAM_MODULE)

$(PAM_BUILD)/fuzz/%: pam/fuzz/%.c $(PAM_CORE_SRCS) $(PAM_HDRS)
	@mkdir -p $(@D)
	$(PAM_FUZZ_CC) -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -o $@ $< $(PAM_CORE_SRCS)

$(PAM_BUILD)/fuzz/seeds.stamp: pam/fuzz/seed.py $(PAM_GOLDEN)
	@mkdir -p $(@D)
	$(PAM_PYTHON) pam/fuzz/seed.py $(PAM_GOLDEN) $(PAM_BUILD)/fuzz/seed-wire \
		$(PAM_BUILD)/fuzz/seed-options
	@touch $@

# Bounded runs: PAM_FUZZ_SECONDS per target; new inputs collect in pam/build/fuzz/corpus-*.
pam-fuzz: $(addprefix $(PAM_BUILD)/fuzz/,$(PAM_FUZZ_TARGETS)) $(PAM_BUILD)/fuzz/seeds.stamp
	@set -e; for t in wire options; do \
		mkdir -p $(PAM_BUILD)/fuzz/corpus-$$t; \
		echo "fuzz_$$t: $(PAM_FUZZ_SECONDS) s"; \
		$(PAM_BUILD)/fuzz/fuzz_$$t -max_total_time=$(PAM_FUZZ_SECONDS) -max_len=8192 \
			-print_final_stats=1 -artifact_prefix=$(PAM_BUILD)/fuzz/crash-$$t- \
			$(PAM_BUILD)/fuzz/corpus-$$t $(PAM_BUILD)/fuzz/seed-$$t \
			> $(PAM_BUILD)/fuzz/fuzz_$$t.log 2>&1 \
			|| { tail -n 40 $(PAM_BUILD)/fuzz/fuzz_$$t.log; exit 1; }; \
		grep -E '^stat::(number_of_executed_units|new_units_added)' \
			$(PAM_BUILD)/fuzz/fuzz_$$t.log; \
		echo "crashes: 0"; \
	done

pam-lint:
	$(PAM_CLANG_FORMAT) --dry-run -Werror pam/*.c pam/*.h pam/tests/*.c pam/tests/*.h \
		pam/fuzz/*.c

pam-format:
	$(PAM_CLANG_FORMAT) -i pam/*.c pam/*.h pam/tests/*.c pam/tests/*.h pam/fuzz/*.c

# The tests that load libpam through pam_wrapper run with a /tmp of their own: pam_wrapper's
# /tmp/pam.X directories collide between runs at once (pam/tests/privtmp.py, which the tests
# also use for each of their PAM callers).
PAM_PRIVATE_TMP := $(PAM_PYTHON) pam/tests/privtmp.py

pam-test-integration: $(PAM_MODULE)
	$(PAM_PRIVATE_TMP) $(PAM_PYTHON) pam/tests/integration.py --module $(abspath $(PAM_MODULE)) \
		--bin $(abspath $(PAM_DAEMON_BIN))

pam-test-asan: $(PAM_ASAN_MODULE)
	$(PAM_PRIVATE_TMP) $(PAM_PYTHON) pam/tests/integration.py --module $(abspath $(PAM_ASAN_MODULE)) \
		--bin $(abspath $(PAM_DAEMON_BIN)) --asan

# The real i3lock under Xvfb, driven with xdotool, as an unprivileged user, in front of the
# shipped pam/examples/i3lock stack and the real daemon (issue 9). Runs in a private mount
# namespace; PAM_LOCKER_RUNS runs of each case, the figures printed as medians.
PAM_LOCKER_RUNS ?= 3
pam-test-locker: $(PAM_MODULE) locale test-locales
	$(PAM_PRIVATE_TMP) $(PAM_PYTHON) pam/tests/locker_test.py --module $(abspath $(PAM_MODULE)) \
		--bin $(abspath $(PAM_DAEMON_BIN)) --runs $(PAM_LOCKER_RUNS) --locales $(TEST_LOCPATH) \
		--catalogues $(PO_BUILD_LOCALEDIR) --localedir $(PAM_LOCALEDIR)

# The real sudo 1.9.13, su and login in a tmux terminal, as an ordinary user, with the module
# installed as README.md says (and through the real pam-auth-update), against the real daemon,
# in a private mount namespace (issue 14). PAM_TERMINAL_RUNS runs of each case; the figures
# are printed as medians.
PAM_TERMINAL_RUNS ?= 1
$(PAM_PROBE): pam/tests/probe_module.c pam/pam.mk
	@mkdir -p $(@D)
	$(PAM_CC) -std=gnu11 -O2 $(PAM_WARN) -fPIC -shared -o $@ $< -lpam

pam-test-terminal: $(PAM_MODULE) $(PAM_PROBE) locale test-locales
	$(PAM_PYTHON) pam/tests/terminal_test.py --module $(abspath $(PAM_MODULE)) \
		--bin $(abspath $(PAM_DAEMON_BIN)) --probe $(abspath $(PAM_PROBE)) \
		--runs $(PAM_TERMINAL_RUNS) --locales $(TEST_LOCPATH) --catalogues $(PO_BUILD_LOCALEDIR) \
		--localedir $(PAM_LOCALEDIR)

# Every PAM line the documents show (README.md, pam/README.md, pam/examples/, docs/, the man
# page's EXAMPLES) and the pam-configs profile through the real pam-auth-update, each through
# the real libpam: a finger, a password, a wrong password, refused fingers, a password typed at
# a terminal (issue 14). In a private mount namespace; no documented line may use `end`.
pam-test-stacks: $(PAM_MODULE)
	$(PAM_PYTHON) pam/tests/stacks_test.py --module $(abspath $(PAM_MODULE)) \
		--bin $(abspath $(PAM_DAEMON_BIN))

# The keyring opens (issue 17): Debian 12's gdm-password with the real pam_gnome_keyring after
# the module, as pam-auth-update places them, through the real libpam, the real
# gnome-keyring-daemon on a private session bus, logind mocked, each "boot" a fresh boot id. In a
# private mount namespace.
pam-test-keyring: $(PAM_MODULE)
	$(PAM_PYTHON) pam/tests/keyring_test.py --module $(abspath $(PAM_MODULE)) \
		--bin $(abspath $(PAM_DAEMON_BIN))

# The PAM client that bench/bench.py and pam/tests/hostile.py drive (its conversation answers the finger prompt
# with a virtual scan). Not part of any install.
pam-bench: $(PAM_BENCH_CLIENT) $(PAM_MODULE)

$(PAM_BENCH_CLIENT): pam/tests/bench_client.c pam/pam.mk
	@mkdir -p $(@D)
	$(PAM_CC) -std=gnu11 -O2 $(PAM_WARN) -pthread -o $@ $< -lpam

# Daemon death never hangs a login: kill -9 the real daemon at random moments of
# pam_authenticate (docs/reliability.md, promise 1).
$(PAM_STEP_CLIENT): pam/tests/step_client.c pam/pam.mk
	@mkdir -p $(@D)
	$(PAM_CC) -std=gnu11 -O2 $(PAM_WARN) -o $@ $< -lpam

pam-test-death: $(PAM_MODULE) $(PAM_STEP_CLIENT)
	$(PAM_PRIVATE_TMP) $(PAM_PYTHON) pam/tests/daemon_death.py --module $(abspath $(PAM_MODULE)) \
		--bin $(abspath $(PAM_DAEMON_BIN)) --client $(abspath $(PAM_STEP_CLIENT)) \
		--kills $(PAM_DEATH_KILLS) --json $(PAM_BUILD)/daemon_death.json

# Hostile local clients (1000 idle connections, a flood from uid 65534, oversized and slow
# frames) while root's pam_authenticate is timed by bench_client (section 6).
pam-test-hostile: $(PAM_MODULE) $(PAM_BENCH_CLIENT)
	$(PAM_PRIVATE_TMP) $(PAM_PYTHON) pam/tests/hostile.py --module $(abspath $(PAM_MODULE)) \
		--bin $(abspath $(PAM_DAEMON_BIN)) --client $(abspath $(PAM_BENCH_CLIENT)) \
		--json $(PAM_BUILD)/hostile.json

# The module under valgrind memcheck through pamtester: 0 errors, 0 leaks (section 4).
pam-test-memcheck: $(PAM_MODULE)
	$(PAM_PRIVATE_TMP) $(PAM_PYTHON) pam/tests/memcheck.py --module $(abspath $(PAM_MODULE))

# Allocation, poll, read/recv, write/send, socket/connect failing at the Nth call, swept over
# N: never a crash, never PAM_SUCCESS unless the daemon said yes (section 4).
$(PAM_FAILINJECT): pam/tests/failinject.c pam/pam.mk
	@mkdir -p $(@D)
	$(PAM_CC) -std=gnu11 -O2 $(PAM_WARN) -fPIC -shared -o $@ $< -ldl

pam-test-failinject: $(PAM_MODULE) $(PAM_FAILINJECT)
	$(PAM_PRIVATE_TMP) $(PAM_PYTHON) pam/tests/failinject.py --module $(abspath $(PAM_MODULE)) \
		--shim $(abspath $(PAM_FAILINJECT))

# The module is copied under a temporary name and renamed over the old one, so a process that
# has the old module mapped (a screen locker) keeps a whole file and no one ever loads half a
# module. The man page is compressed as Debian does (gzip -9n: no name, no time stamp).
pam-install: $(PAM_MODULE)
	@test -n "$(PAM_MULTIARCH)" || { echo "pam-install: no multiarch triplet (set PAM_MULTIARCH)" >&2; exit 1; }
	install -d -m 0755 $(DESTDIR)$(PAM_SECURITYDIR) $(DESTDIR)$(PAM_CONFIGSDIR) \
		$(DESTDIR)$(PAM_MAN8DIR) $(DESTDIR)$(PAM_EXAMPLESDIR)
	install -m 0644 $(PAM_MODULE) $(DESTDIR)$(PAM_SECURITYDIR)/.pam_localauth.so.new
	mv -f $(DESTDIR)$(PAM_SECURITYDIR)/.pam_localauth.so.new \
		$(DESTDIR)$(PAM_SECURITYDIR)/pam_localauth.so
	gzip -9n -c pam/pam_localauth.8 > $(DESTDIR)$(PAM_MAN8DIR)/pam_localauth.8.gz
	chmod 0644 $(DESTDIR)$(PAM_MAN8DIR)/pam_localauth.8.gz
	install -m 0644 pam/pam-configs/localauth $(DESTDIR)$(PAM_CONFIGSDIR)/localauth
	install -m 0644 $(addprefix pam/examples/,$(PAM_EXAMPLES)) $(DESTDIR)$(PAM_EXAMPLESDIR)/

# Removes the files pam-install put and its own examples directory; shared directories stay.
# Run `pam-auth-update --remove localauth` first on a live system, or common-auth names a
# module that is gone.
pam-uninstall:
	@test -n "$(PAM_MULTIARCH)" || { echo "pam-uninstall: no multiarch triplet (set PAM_MULTIARCH)" >&2; exit 1; }
	rm -f $(DESTDIR)$(PAM_SECURITYDIR)/pam_localauth.so \
		$(DESTDIR)$(PAM_SECURITYDIR)/.pam_localauth.so.new \
		$(DESTDIR)$(PAM_MAN8DIR)/pam_localauth.8.gz \
		$(DESTDIR)$(PAM_CONFIGSDIR)/localauth \
		$(addprefix $(DESTDIR)$(PAM_EXAMPLESDIR)/,$(PAM_EXAMPLES))
	if [ -d $(DESTDIR)$(PAM_EXAMPLESDIR) ]; then \
		rmdir --ignore-fail-on-non-empty $(DESTDIR)$(PAM_EXAMPLESDIR); fi

# pam-install and pam-uninstall into temporary DESTDIRs (PREFIX=/usr and /usr/local).
pam-test-install: $(PAM_MODULE)
	$(PAM_PYTHON) pam/tests/install_test.py --make "$(MAKE) -f pam/pam.mk" \
		--module $(PAM_MODULE) --multiarch "$(PAM_MULTIARCH)" --examples "$(PAM_EXAMPLES)"

pam-clean:
	rm -rf $(PAM_BUILD)

.DEFAULT_GOAL := $(PAM_SAVED_DEFAULT_GOAL)
