# SPDX-License-Identifier: Apache-2.0
# `make` builds everything; `make demo` shows the whole flow; `make test` runs every check.
SHELL := /bin/bash
PREFIX ?= /usr/local
DESTDIR ?=
SWIFT ?= swift
CONFIG ?= release
BIN_DEBUG = .build/debug
BIN_RELEASE = .build/release

.PHONY: all build build-debug deps demo test test-swift test-integration lint format clean install uninstall

all: deps build pam

deps:
	@scripts/ensure-deps.sh

build: deps
	$(SWIFT) build -c $(CONFIG) --product localauthd
	$(SWIFT) build -c $(CONFIG) --product localauthctl

build-debug: deps
	$(SWIFT) build --build-tests

demo: deps build-debug pam
	@scripts/demo.sh

# Everything the project checks. Unit and integration tests of the Swift targets (the
# integration tests start the real daemon on a temporary socket with libfprint's virtual
# devices), the PAM module's C tests and its tests through real libpam, then the linters.
test: deps build-debug pam pam-asan
	LOCALAUTH_BIN=$(CURDIR)/$(BIN_DEBUG) $(SWIFT) test --skip-build 2>&1 | tee .build/swift-test.log; exit $${PIPESTATUS[0]}
	$(MAKE) pam-test-unit pam-test-integration pam-test-asan pam-test-install
	$(MAKE) lint

lint:
	swift-format lint --strict -r Sources Tests Package.swift
	$(MAKE) pam-lint

format:
	swift-format format -i -r Sources Tests Package.swift
	clang-format -i pam/*.c pam/*.h pam/tests/*.c

clean: pam-clean
	rm -rf .build

-include pam/pam.mk
