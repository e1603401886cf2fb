# SPDX-License-Identifier: Apache-2.0
# `make` builds everything; `make demo` shows the whole flow; `make test` runs every check.
SHELL := /bin/bash
PREFIX ?= /usr/local
DESTDIR ?=
SWIFT ?= swift
CONFIG ?= release
BIN_DEBUG = .build/debug
BIN_RELEASE = .build/release
# Release binaries carry the Swift runtime (docs/performance.md: localauthctl starts in half the
# time, the daemon's RSS is 1.7 MB less). `make STATIC_STDLIB=` links it dynamically.
# That runtime still needed libstdc++.so, whose ~1,700 symbol relocations were more than half of
# each localauthctl run's instructions: its archive goes in instead, through a linker script named
# libstdc++.so in a directory the linker searches first (GCC's runtime library exception allows it).
# The executables export no symbols (--no-export-dynamic): the 16,000 the toolchain exported by
# default (.dynsym, .dynstr, .gnu.hash: 1.3 MB resident) were searched by the dynamic loader for
# every symbol of the 33 libraries; the daemon's idle RSS is 2.4 MB less without them, and nothing
# looks them up (docs/performance.md, "Round three").
# They are linked by lld (the Swift toolchain's) with packed relative relocations (DT_RELR, glibc
# 2.36; Debian 12's): the PIE's 56,500 R_X86_64_RELATIVE entries, 1.35 MB of .rela.dyn the loader
# reads at every start, become 11 kB of .relr.dyn; the daemon's idle RSS is 0.7 MB less
# (docs/performance.md, "Cold start and `list`, taken apart"). Still PIE: ASLR stays. `-use-ld` is
# a compiler-driver flag, so changing it recompiles the release build once.
STATIC_CXX_DIR = $(CURDIR)/.build/static-cxx
STATIC_STDLIB ?= --static-swift-stdlib -Xlinker -L$(STATIC_CXX_DIR) -Xlinker --no-export-dynamic \
	-Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs

.PHONY: all build build-debug deps demo test check-checkout lint format clean install uninstall test-system deb \
        check-apple-api \
        test-deb test-boot

all: deps build pam locale

deps:
	@scripts/ensure-deps.sh

# The linker script for STATIC_STDLIB: libstdc++.a of the C++ compiler the Swift toolchain uses.
$(STATIC_CXX_DIR)/libstdc++.so:
	@archive=$$(gcc -print-file-name=libstdc++.a); \
	case "$$archive" in /*) ;; *) echo "libstdc++.a not found (libstdc++-12-dev)" >&2; exit 1;; esac; \
	mkdir -p $(@D) && echo "INPUT($$archive)" > $@

build: deps $(STATIC_CXX_DIR)/libstdc++.so
	$(SWIFT) build -c $(CONFIG) $(STATIC_STDLIB) --product localauthd
	$(SWIFT) build -c $(CONFIG) $(STATIC_STDLIB) --product localauthctl
	$(SWIFT) build -c $(CONFIG) $(STATIC_STDLIB) --product vault

build-debug: deps
	$(SWIFT) build --build-tests

demo: deps build-debug pam locale
	@scripts/demo.sh

# The suites whose tests run each in a child process (exit tests: one libfprint context per
# process); scripts/exit-tests.sh runs them apart from the rest.
EXIT_TESTS = LifecycleTests|EvaluationRunTests|FprintdDoorTests
# The integration tests run in a process of their own: their harness waits on the daemon with
# blocking calls, which hold threads of Swift's cooperative pool (as wide as the machine's cores:
# two here) for minutes, and the short time-limited suites sharing that process then starved
# (AppleStyleTests hit its one-minute limit waiting for a pool thread, 2026-11-23, load 12).
# Their suites also run each test off that pool (Tests/IntegrationTests/OwnThreads.swift), and
# as many tests run at once as the machine has cores: with all 134 at once, 134 daemons shared
# two cores and the tests' bounds on "at once" (a second, not a scan's 20) failed.
INTEGRATION_WIDTH ?= $(shell nproc)
INTEGRATION_TESTS = ^IntegrationTests\.

# The tests run programs from the checkout as test accounts: say first if they cannot reach it.
check-checkout:
	@scripts/check-checkout.sh

# Everything the project checks. Unit and integration tests of the Swift targets (the
# integration tests start the real daemon on a temporary socket with libfprint's virtual
# devices), the PAM module's C tests and its tests through real libpam, the installed tree and
# units (Tests/system/install.sh), and last the packages on a booted Debian 12 (make test-boot).
# The linters run first.
test: check-checkout deps lint build-debug pam pam-asan locale test-locales check-translations check-catalogued
	rm -f .build/swift-test.log
	LOCALAUTH_BIN=$(CURDIR)/$(BIN_DEBUG) scripts/swift-tests.sh .build/swift-test.log \
		$(SWIFT) test --skip-build --skip '$(EXIT_TESTS)|$(INTEGRATION_TESTS)'
	SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=$(INTEGRATION_WIDTH) LOCALAUTH_BIN=$(CURDIR)/$(BIN_DEBUG) \
		scripts/swift-tests.sh .build/swift-test.log $(SWIFT) test --skip-build --filter '$(INTEGRATION_TESTS)'
	scripts/exit-tests.sh '$(EXIT_TESTS)' $(SWIFT) test --skip-build
	$(MAKE) pam-test-unit pam-test-integration pam-test-asan pam-test-install
	$(MAKE) pam-test-locker pam-test-terminal pam-test-stacks pam-test-keyring
	$(MAKE) pam-test-death pam-test-hostile pam-test-memcheck pam-test-failinject
	$(MAKE) test-fprintd
	$(MAKE) test-ssh
	$(MAKE) test-system
	$(MAKE) test-boot

# Formatting first: a mis-formatted tree fails in seconds, not after the tests. swift-format for
# Swift; clang-format for the C of the PAM module (pam-lint) and the C shims of the system-library
# targets (Sources/*/shim.h).
lint:
	swift-format lint --strict -r Sources Tests Examples Package.swift
	$(PAM_CLANG_FORMAT) --dry-run -Werror Sources/*/shim.h
	$(MAKE) pam-lint check-catalogued check-apple-api
	@! grep -n '^@Suite' Tests/IntegrationTests/*.swift | grep -v '\.onOwnThreads' \
		| sed 's/$$/  <- an integration suite without .onOwnThreads (Tests\/README.md)/' | grep .

# Every declaration of Apple's API that docs/apple-api.md marks for Linux is used in the compile
# test Tests/AppleStyleTests/AppleSpellings.swift (which `swift build --build-tests` compiles).
check-apple-api:
	scripts/check-apple-api.py --self-test
	scripts/check-apple-api.py

format:
	swift-format format -i -r Sources Tests Examples Package.swift
	$(PAM_CLANG_FORMAT) -i Sources/*/shim.h
	$(MAKE) pam-format

clean: pam-clean
	rm -rf .build

# Installation. `make install PREFIX=/usr DESTDIR=…` installs the binaries built by `make`
# (BUILT selects another build, e.g. BUILT=.build/debug), the units, the man pages, the shell
# completions, the example configuration, and the PAM module with its pam-configs profile
# (pam-install in pam/pam.mk). Units go where systemd looks for PREFIX: /usr/lib/systemd/system,
# /usr/local/lib/systemd/system. The layout is checked by Tests/system/install.sh.
BUILT ?= .build/$(CONFIG)
SBINDIR ?= $(PREFIX)/sbin
BINDIR ?= $(PREFIX)/bin
UNITDIR ?= $(PREFIX)/lib/systemd/system
USERUNITDIR ?= $(PREFIX)/lib/systemd/user
MANDIR ?= $(PREFIX)/share/man
DOCDIR ?= $(PREFIX)/share/doc/localauth
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/vendor-completions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
MAN_PAGES := man/localauthd.8 man/localauthctl.1 man/localauthd.conf.5

install: pam locale
	@test -x $(BUILT)/localauthd -a -x $(BUILT)/localauthctl || $(MAKE) build
	install -d -m 0755 $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(USERUNITDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(DOCDIR) \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	install -m 0755 $(BUILT)/localauthd $(DESTDIR)$(SBINDIR)/localauthd
	install -m 0755 $(BUILT)/localauthctl $(DESTDIR)$(BINDIR)/localauthctl
	sed 's|@SBINDIR@|$(SBINDIR)|g' systemd/localauthd.service > $(DESTDIR)$(UNITDIR)/localauthd.service
	install -m 0644 systemd/localauthd.socket $(DESTDIR)$(UNITDIR)/localauthd.socket
	chmod 0644 $(DESTDIR)$(UNITDIR)/localauthd.service
	sed 's|@BINDIR@|$(BINDIR)|g' systemd/user/localauth-ssh-agent.service \
		> $(DESTDIR)$(USERUNITDIR)/localauth-ssh-agent.service
	chmod 0644 $(DESTDIR)$(USERUNITDIR)/localauth-ssh-agent.service
	install -m 0644 systemd/user/localauth-ssh-agent.socket $(DESTDIR)$(USERUNITDIR)/localauth-ssh-agent.socket
	for page in $(MAN_PAGES); do \
		section=$${page##*.}; \
		gzip -9n -c $$page > $(DESTDIR)$(MANDIR)/man$$section/$${page#man/}.gz; \
		chmod 0644 $(DESTDIR)$(MANDIR)/man$$section/$${page#man/}.gz; \
	done
	install -m 0644 config/localauthd.conf $(DESTDIR)$(DOCDIR)/localauthd.conf
	$(BUILT)/localauthctl --generate-completion-script bash > $(DESTDIR)$(BASHCOMPDIR)/localauthctl
	$(BUILT)/localauthctl --generate-completion-script zsh > $(DESTDIR)$(ZSHCOMPDIR)/_localauthctl
	$(BUILT)/localauthctl --generate-completion-script fish > $(DESTDIR)$(FISHCOMPDIR)/localauthctl.fish
	chmod 0644 $(DESTDIR)$(BASHCOMPDIR)/localauthctl $(DESTDIR)$(ZSHCOMPDIR)/_localauthctl \
		$(DESTDIR)$(FISHCOMPDIR)/localauthctl.fish
	$(MAKE) pam-install PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)
	$(MAKE) locale-install PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)

# Removes exactly what install put, then the directories it made that are left empty.
uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/localauthd $(DESTDIR)$(BINDIR)/localauthctl \
		$(DESTDIR)$(UNITDIR)/localauthd.service $(DESTDIR)$(UNITDIR)/localauthd.socket \
		$(DESTDIR)$(USERUNITDIR)/localauth-ssh-agent.service $(DESTDIR)$(USERUNITDIR)/localauth-ssh-agent.socket \
		$(DESTDIR)$(MANDIR)/man8/localauthd.8.gz $(DESTDIR)$(MANDIR)/man1/localauthctl.1.gz \
		$(DESTDIR)$(MANDIR)/man5/localauthd.conf.5.gz $(DESTDIR)$(DOCDIR)/localauthd.conf \
		$(DESTDIR)$(BASHCOMPDIR)/localauthctl $(DESTDIR)$(ZSHCOMPDIR)/_localauthctl \
		$(DESTDIR)$(FISHCOMPDIR)/localauthctl.fish
	$(MAKE) pam-uninstall PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)
	$(MAKE) locale-uninstall PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)
	if [ -d $(DESTDIR)$(DOCDIR) ]; then rmdir --ignore-fail-on-non-empty $(DESTDIR)$(DOCDIR); fi
	if [ -d $(DESTDIR)$(USERUNITDIR) ]; then rmdir --ignore-fail-on-non-empty $(DESTDIR)$(USERUNITDIR); fi

# fprintd's D-Bus API (the localauth-fprintd-compat package): the bus policy, the D-Bus activation
# file, fprintd's polkit actions, and the configuration drop-in that turns the API on
# (`fprintd-compat = yes`; the daemon reads /usr/lib/localauthd.conf.d whatever PREFIX is, so a
# local ExecStart= drop-in of the unit cannot drop the mode).
DBUSDIR ?= $(PREFIX)/share/dbus-1
POLKITDIR ?= $(PREFIX)/share/polkit-1/actions
CONFDROPINDIR ?= /usr/lib/localauthd.conf.d
COMPAT_FILES := $(DESTDIR)$(DBUSDIR)/system.d/net.reactivated.Fprint.conf \
	$(DESTDIR)$(DBUSDIR)/system-services/net.reactivated.Fprint.service \
	$(DESTDIR)$(POLKITDIR)/net.reactivated.fprint.device.policy \
	$(DESTDIR)$(CONFDROPINDIR)/50-fprintd-compat.conf
.PHONY: install-fprintd-compat uninstall-fprintd-compat
install-fprintd-compat:
	install -d -m 0755 $(DESTDIR)$(DBUSDIR)/system.d $(DESTDIR)$(DBUSDIR)/system-services $(DESTDIR)$(POLKITDIR) \
		$(DESTDIR)$(CONFDROPINDIR)
	install -m 0644 packaging/fprintd-compat/net.reactivated.Fprint.conf $(DESTDIR)$(DBUSDIR)/system.d/
	sed 's|@SBINDIR@|$(SBINDIR)|g' packaging/fprintd-compat/net.reactivated.Fprint.service \
		> $(DESTDIR)$(DBUSDIR)/system-services/net.reactivated.Fprint.service
	install -m 0644 packaging/fprintd-compat/net.reactivated.fprint.device.policy $(DESTDIR)$(POLKITDIR)/
	install -m 0644 packaging/fprintd-compat/50-fprintd-compat.conf $(DESTDIR)$(CONFDROPINDIR)/
	chmod 0644 $(COMPAT_FILES)

uninstall-fprintd-compat:
	rm -f $(COMPAT_FILES)
	-rmdir $(DESTDIR)$(CONFDROPINDIR) 2>/dev/null

# A Debian package of the release build: dist/localauth_VERSION_ARCH.deb (scripts/make-deb.sh).
# test-deb installs it with dpkg -i on this machine, checks it and removes it (Tests/system/deb.sh);
# it changes the machine while it runs, so it is not part of `make test`.
deb: pam
	@scripts/ensure-deps.sh dpkg-dev
	$(MAKE) build CONFIG=release
	BUILT=$(BIN_RELEASE) scripts/make-deb.sh

test-deb: deb
	Tests/system/deb.sh dist/localauth_$${DEB_VERSION:-0.1.0}_$$(dpkg --print-architecture).deb

# The booted-system tier (Tests/boot, docs/reliability.md section 8): the packages `make deb` built,
# installed with apt on a minimal Debian 12 booted with systemd-nspawn (systemd as PID 1, the
# real logind, journald, dbus-daemon and polkitd), and a person's journeys there at its console.
# The root is made once with mmdebstrap from this machine's apt sources and cached under
# .build/boot-root (Tests/boot/root.sh); each run boots a copy. As root; it fails, never skips,
# where it cannot boot.
# localauth-bench (never installed) is copied in for journey l: sd-login's files and logind's bus,
# each's view of the same callers, from the daemon's own LoginSessions code.
test-boot: deb $(STATIC_CXX_DIR)/libstdc++.so
	@scripts/ensure-deps.sh mmdebstrap systemd-container
	$(SWIFT) build -c release $(STATIC_STDLIB) --product localauth-bench
	root=$$(Tests/boot/root.sh) && Tests/boot/tier.py --root "$$root" --bench $(BIN_RELEASE)/localauth-bench \
		--deb dist/localauth_$${DEB_VERSION:-0.1.0}_$$(dpkg --print-architecture).deb \
		--compat dist/localauth-fprintd-compat_$${DEB_VERSION:-0.1.0}_all.deb $(BOOT_ARGS)

# fprintd's D-Bus API served by localauthd (Tests/fprintd): the real system bus daemon with our bus
# policy, the real polkitd with our actions and pkttyagent, Debian's fprintd-* tools, pam_fprintd.so
# and a listening client, in a private mount and pid namespace (root). fprintd's own suite is not
# here (it is not ours; Tests/fprintd/upstream-suite.sh runs it from outside). Then two classes again
# while useradd replaces the (stand-in) host's /etc/passwd every 0.1 s (host-passwd-churn.sh).
.PHONY: test-fprintd
test-fprintd: build-debug pam
	LOCALAUTH_PAM_MODULE=$(abspath $(PAM_MODULE)) Tests/fprintd/run.sh $(BIN_DEBUG)
	LOCALAUTH_PAM_MODULE=$(abspath $(PAM_MODULE)) Tests/fprintd/host-passwd-churn.sh $(BIN_DEBUG) \
		ClaimTests FirstFingerTests

# Touch ID for ssh (issue 30): OpenSSH's sshd on 127.0.0.1 and the real ssh, ssh-add and ssh-keygen
# through `localauthctl ssh-agent`, against the real daemon, in a private mount namespace.
.PHONY: test-ssh
test-ssh: build-debug pam
	$(PAM_PRIVATE_TMP) $(PAM_PYTHON) Tests/ssh/ssh_agent_test.py --module $(abspath $(PAM_MODULE)) \
		--bin $(abspath $(BIN_DEBUG))

# The installed tree, the units under systemd-analyze, the man pages, the promised config errors.
test-system: build-debug pam
	Tests/system/install.sh

# Benchmarks side by side with fprintd + pam_fprintd (bench/bench.py; docs/performance.md), then
# the same on the booted system (bench-boot). Release builds; as root; a quarter of an hour; not
# part of `make test`. JSON in bench/results/.
.PHONY: bench
bench: deps pam pam-bench $(STATIC_CXX_DIR)/libstdc++.so
	$(SWIFT) build -c release $(STATIC_STDLIB) --product localauthd
	$(SWIFT) build -c release $(STATIC_STDLIB) --product localauthctl
	$(SWIFT) build -c release $(STATIC_STDLIB) --product localauth-bench
	/usr/bin/python3 bench/bench.py --bin $(BIN_RELEASE) $(BENCH_ARGS)
	/usr/bin/python3 bench/terminal.py --module pam/build/pam_localauth.so --bin $(BIN_RELEASE) \
		$(BENCH_TERMINAL_ARGS)
	/usr/bin/python3 pam/tests/privtmp.py /usr/bin/python3 bench/ssh_sign.py \
		--module $(abspath pam/build/pam_localauth.so) --bin $(abspath $(BIN_RELEASE))
	$(MAKE) bench-boot

# The same figures on the booted Debian 12 of test-boot (bench/boot.py; docs/performance.md):
# localauthd under its shipped units beside Debian's fprintd under its own, the real systemd,
# logind, dbus-daemon and polkitd; then the booted table beside the one `make bench` just wrote
# (bench/results/latest.json). As root; a few minutes.
.PHONY: bench-boot
bench-boot: deb pam-bench
	@scripts/ensure-deps.sh mmdebstrap systemd-container
	$(SWIFT) build -c release $(STATIC_STDLIB) --product localauth-bench
	root=$$(Tests/boot/root.sh) && /usr/bin/python3 bench/boot.py --root "$$root" --bin $(BIN_RELEASE) \
		--deb dist/localauth_$${DEB_VERSION:-0.1.0}_$$(dpkg --print-architecture).deb \
		--compat dist/localauth-fprintd-compat_$${DEB_VERSION:-0.1.0}_all.deb $(BENCH_BOOT_ARGS)

# sudo in a real terminal, ours beside pam_fprintd (bench/terminal.py; docs/performance.md).
# Uses whatever build BIN names (release by default); fprintd and polkitd must be installed.
.PHONY: bench-terminal
BIN ?= $(BIN_RELEASE)
bench-terminal: pam
	/usr/bin/python3 bench/terminal.py --module pam/build/pam_localauth.so --bin $(BIN) \
		$(BENCH_TERMINAL_ARGS)

-include pam/pam.mk
-include po/po.mk
-include fuzz/fuzz.mk
