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
FUZZ_SWIFT_SRCS := $(wildcard Sources/LocalAuthProtocol/*.swift) fuzz/codec.swift

.PHONY: fuzz fuzz-swift

fuzz:
	$(MAKE) pam-fuzz PAM_FUZZ_SECONDS=$(FUZZ_SECONDS)
	$(MAKE) fuzz-swift FUZZ_SECONDS=$(FUZZ_SECONDS)

$(FUZZ_SWIFT): $(FUZZ_SWIFT_SRCS) fuzz/fuzz.mk
	@mkdir -p $(@D)
	$(FUZZ_SWIFTC) -sanitize=fuzzer,address -parse-as-library -O -module-name LocalAuthProtocolFuzz \
		$(FUZZ_SWIFT_SRCS) -o $@ 2>&1 | { grep -v 'Cannot export local symbol' || true; }
	@test -x $@

$(FUZZ_BUILD)/seed-swift.stamp: pam/fuzz/seed.py $(PAM_GOLDEN)
	@mkdir -p $(@D)
	$(PAM_PYTHON) pam/fuzz/seed.py $(PAM_GOLDEN) $(FUZZ_BUILD)/seed-swift $(FUZZ_BUILD)/seed-unused
	@touch $@

fuzz-swift: $(FUZZ_SWIFT) $(FUZZ_BUILD)/seed-swift.stamp
	@mkdir -p $(FUZZ_BUILD)/corpus-swift
	@echo "fuzz_swift_codec: $(FUZZ_SECONDS) s"
	@$(FUZZ_SWIFT) -max_total_time=$(FUZZ_SECONDS) -max_len=8192 -print_final_stats=1 \
		-artifact_prefix=$(FUZZ_BUILD)/crash-swift- $(FUZZ_BUILD)/corpus-swift \
		$(FUZZ_BUILD)/seed-swift > $(FUZZ_BUILD)/fuzz_swift_codec.log 2>&1 \
		|| { tail -n 40 $(FUZZ_BUILD)/fuzz_swift_codec.log; \
		     echo "crashes: 1 ($$(ls $(FUZZ_BUILD)/crash-swift-* | tail -n 1))"; exit 1; }
	@grep -E '^stat::(number_of_executed_units|new_units_added)' $(FUZZ_BUILD)/fuzz_swift_codec.log
	@echo "crashes: 0"
