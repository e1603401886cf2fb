# SPDX-License-Identifier: Apache-2.0
#
# `make fuzz`: every fuzz target for a bounded time (FUZZ_SECONDS each): the C codec and the
# PAM argument parser (pam-fuzz in pam/pam.mk) and the Swift codec (fuzz/codec.swift). Seeds
# are the golden vectors; new inputs collect in the corpus directories. Each target prints
# its executions, new inputs and crashes (a crash input is kept as crash-*).
# SwiftPM cannot link a -sanitize=fuzzer executable target, so swiftc compiles the codec's
# sources and the fuzz entry point into one module (docs/reliability.md, section 4).

FUZZ_SECONDS ?= 60
FUZZ_SWIFTC ?= swiftc
FUZZ_BUILD := .build/fuzz
FUZZ_SWIFT := $(FUZZ_BUILD)/fuzz_swift_codec
FUZZ_SWIFT_SRCS := $(wildcard Sources/LocalAuthProtocol/*.swift) fuzz/codec.swift fuzz/two_reads.swift
# The ssh agent's codec (Sources/SSHAgentProtocol), seeded with a few well-formed agent frames.
FUZZ_AGENT := $(FUZZ_BUILD)/fuzz_ssh_agent
FUZZ_AGENT_SRCS := $(wildcard Sources/SSHAgentProtocol/*.swift) $(wildcard Sources/SHA2/*.swift) fuzz/agent.swift \
	fuzz/two_reads.swift

.PHONY: fuzz fuzz-swift fuzz-agent

# $(call fuzz_compile,MODULE,SOURCES): one Swift fuzz target, the sources and its entry point as
# one module.
define fuzz_compile
	@mkdir -p $(@D)
	$(FUZZ_SWIFTC) -sanitize=fuzzer,address -parse-as-library -O -module-name $(1) \
		$(2) -o $@ 2>&1 | { grep -v 'Cannot export local symbol' || true; }
	@test -x $@
endef

# $(call fuzz_run,BINARY,KIND): runs a Swift fuzz target for FUZZ_SECONDS on the seeds
# seed-KIND, new inputs into corpus-KIND, a crash input kept as crash-KIND-*.
define fuzz_run
	@mkdir -p $(FUZZ_BUILD)/corpus-$(2)
	@echo "$(notdir $(1)): $(FUZZ_SECONDS) s"
	@LSAN_OPTIONS=suppressions=$(CURDIR)/fuzz/lsan.supp $(1) -max_total_time=$(FUZZ_SECONDS) -max_len=8192 -print_final_stats=1 \
		-artifact_prefix=$(FUZZ_BUILD)/crash-$(2)- $(FUZZ_BUILD)/corpus-$(2) \
		$(FUZZ_BUILD)/seed-$(2) > $(1).log 2>&1 \
		|| { tail -n 40 $(1).log; \
		     echo "crashes: 1 ($$(ls $(FUZZ_BUILD)/crash-$(2)-* | tail -n 1))"; exit 1; }
	@grep -E '^stat::(number_of_executed_units|new_units_added)' $(1).log
	@echo "crashes: 0"
endef

fuzz:
	$(MAKE) pam-fuzz PAM_FUZZ_SECONDS=$(FUZZ_SECONDS)
	$(MAKE) fuzz-swift FUZZ_SECONDS=$(FUZZ_SECONDS)
	$(MAKE) fuzz-agent FUZZ_SECONDS=$(FUZZ_SECONDS)

$(FUZZ_SWIFT): $(FUZZ_SWIFT_SRCS) fuzz/fuzz.mk
	$(call fuzz_compile,LocalAuthProtocolFuzz,$(FUZZ_SWIFT_SRCS))

$(FUZZ_BUILD)/seed-swift.stamp: pam/fuzz/seed.py $(PAM_GOLDEN)
	@mkdir -p $(@D)
	$(PAM_PYTHON) pam/fuzz/seed.py $(PAM_GOLDEN) $(FUZZ_BUILD)/seed-swift $(FUZZ_BUILD)/seed-unused
	@touch $@

fuzz-swift: $(FUZZ_SWIFT) $(FUZZ_BUILD)/seed-swift.stamp
	$(call fuzz_run,$(FUZZ_SWIFT),swift)

$(FUZZ_AGENT): $(FUZZ_AGENT_SRCS) fuzz/fuzz.mk
	$(call fuzz_compile,SSHAgentFuzz,$(FUZZ_AGENT_SRCS))

# Seeds: REQUEST_IDENTITIES, a SIGN_REQUEST, a session-bind, an ADD_IDENTITY, an unknown number.
$(FUZZ_BUILD)/seed-agent.stamp: fuzz/fuzz.mk
	@mkdir -p $(FUZZ_BUILD)/seed-agent
	@printf '\x00\x00\x00\x01\x0b' > $(FUZZ_BUILD)/seed-agent/identities
	@printf '\x00\x00\x00\x0e\x0d\x00\x00\x00\x01\x41\x00\x00\x00\x01\x42\x00\x00\x00\x00' \
		> $(FUZZ_BUILD)/seed-agent/sign
	@printf '\x00\x00\x00\x2c\x1b\x00\x00\x00\x18session-bind@openssh.com\x00\x00\x00\x01\x01\x00\x00\x00\x01\x02\x00\x00\x00\x00\x01' \
		> $(FUZZ_BUILD)/seed-agent/bind
	@printf '\x00\x00\x00\x01\x11' > $(FUZZ_BUILD)/seed-agent/add
	@printf '\x00\x00\x00\x01\xc8' > $(FUZZ_BUILD)/seed-agent/unknown
	@touch $@

fuzz-agent: $(FUZZ_AGENT) $(FUZZ_BUILD)/seed-agent.stamp
	$(call fuzz_run,$(FUZZ_AGENT),agent)
