# agentbox — plain Makefile (read top to bottom in a minute).
#   make            build/agentbox and build/agentbox-agent
#   make check      install what is missing, build, run every test (tests/check: two lanes
#                   at a time, a table of suites at the end)
#   make layers     check every #include in src/ against docs/architecture.md's layer table
#   make fuzz       build the libFuzzer harnesses (clang-14) and run each for FUZZ_SECONDS
#   make demo       install what is missing, build, run the demonstration
#   make bench      every benchmark under bench/ (bench/run-all: startup against bwrap and unshare,
#                   daemon exec, egress, credential, every backend against its raw tool, the agent
#                   doors, images, pools, snapshots, OCI, browser, ...), a summary of what ran
#   make install    copy the binaries to $(PREFIX)/bin
#   make static-services  build/agentbox-services-static: the sidecar services, one static file
#                   (scripts/build-images puts it in the sidecar image; not part of `make`)

CC      ?= gcc
BUILD   ?= build
PREFIX  ?= /usr/local
CFLAGS  ?= -O2 -g
ifeq ($(origin CC),default)
CC := gcc
endif

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wformat=2 -Wformat-security -Wpointer-arith -Wimplicit-fallthrough -Wundef \
	-Wvla -Wnull-dereference -Wno-missing-field-initializers -Wno-unused-parameter \
	-Wno-format-truncation
ifneq ($(findstring clang,$(CC)),)
WARN += -Wno-unknown-warning-option
endif
HARDEN := -fstack-protector-strong -D_FORTIFY_SOURCE=2 -fPIE
# One section per function and object, so the lean `agentbox` (below) can
# drop with --gc-sections the code its one-shot path never reaches.
ALL_CFLAGS := -std=gnu11 -D_GNU_SOURCE $(WARN) $(HARDEN) -ffunction-sections -fdata-sections \
	-Isrc -I$(BUILD)/gen $(CFLAGS) -MMD -MP
HOST_LDFLAGS := -Wl,--as-needed -pie -Wl,-z,relro,-z,now,-z,noexecstack $(LDFLAGS)
HOST_LIBS := -ljansson -levent_core -lpthread -lssl -lcrypto -lseccomp -lz $(shell pkg-config --libs libcurl libarchive)

# Host libraries: one archive per layer (build/lib/libab-LAYER.a; every
# layer except the agent, without the CLI's main()), linked in this order,
# each layer before the layers it may use (docs/architecture.md), base
# last, with no --start-group: the linker reads each archive once, so a
# call from a lower layer into a higher one is an undefined symbol at link
# time, as an upward #include is a failure of `make layers`.
HOST_LAYERS := cli daemon image session backend net isolate spec policy proto base
# Each program's main(), kept out of the layer archives.
PROGRAM_MAINS := src/cli/main.c src/cli/full-main.c src/cli/services-main.c
HOST_SRC  := $(filter-out $(PROGRAM_MAINS),$(foreach d,$(HOST_LAYERS),$(wildcard src/$(d)/*.c)))
# The agent is static and links libc only: base (minus the JSON helpers) and proto.
AGENT_SRC := $(wildcard src/agent/*.c) $(wildcard src/proto/*.c) \
	$(filter-out src/base/json%.c,$(wildcard src/base/*.c))

AGENT_OBJ := $(AGENT_SRC:%.c=$(BUILD)/agent-obj/%.o)
UNIT_SRC  := $(wildcard tests/unit/test-*.c)
UNIT_BIN  := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
HELPER_BIN := $(patsubst tests/helpers/%.c,$(BUILD)/tests/%,$(wildcard tests/helpers/*.c))
GEN := $(BUILD)/gen/seccomp-default.h

.PHONY: static-services all check demo bench install clean unit unit-bins helpers unit-asan asan-bins integration conformance guest deps format format-check clang-build
all: $(BUILD)/agentbox $(BUILD)/agentbox-full $(BUILD)/agentbox-agent $(BUILD)/agentbox-statx-shim.so

# layer_archives OBJDIR LIBDIR: the rule of each layer's archive from the
# objects under OBJDIR, and the archives in link order as $(LIBDIR_ARCHIVES).
define layer_archives
$(2)/libab-%.a:
	@mkdir -p $$(@D)
	@echo "  AR      $$@"
	@rm -f $$@ && $$(AR) rcs $$@ $$^
$(foreach l,$(HOST_LAYERS),$(2)/libab-$(l).a: $(patsubst %.c,$(1)/%.o,$(filter-out $(PROGRAM_MAINS),$(wildcard src/$(l)/*.c)))
)
endef
# agentbox-runc (cli/oci-exec.c) confines container processes with the
# agent's own confinement steps: one home for them, linked into the host too.
$(BUILD)/lib/libab-cli.a: $(BUILD)/obj/src/agent/confine.o
HOST_ARCHIVES := $(foreach l,$(HOST_LAYERS),$(BUILD)/lib/libab-$(l).a)
$(eval $(call layer_archives,$(BUILD)/obj,$(BUILD)/lib))

# The entry users run (cli/main.c): a plain native `agentbox run`, static
# (no dynamic loader at start) with libc and jansson only; --gc-sections
# drops every function its path never reaches, with their references into
# the other libraries, so a call that pulls TLS, libevent, curl or
# libarchive into that path fails this link.  Every other command is
# agentbox-full, which the entry execs.  libc.a members a dropped function
# needed are still read (getaddrinfo's, from net/): the linker's warning
# about them is filtered, and `nm` shows none of them is in the file.
LEAN_LIBS := -ljansson -lpthread
$(BUILD)/agentbox: $(BUILD)/obj/src/cli/main.o $(HOST_ARCHIVES)
	@echo "  LD      $@ (lean, static)"
	@$(CC) $(ALL_CFLAGS) -static-pie -Wl,-z,relro,-z,now,-z,noexecstack -Wl,--gc-sections \
		-o $@.tmp $^ $(LEAN_LIBS) 2>$@.log || { cat $@.log; rm -f $@.tmp; exit 1; }
	@grep -v -e 'in statically linked applications requires at runtime' -e ': in function ' \
		$@.log >&2 || true
	@rm -f $@.log && mv $@.tmp $@

$(BUILD)/agentbox-full: $(BUILD)/obj/src/cli/full-main.o $(HOST_ARCHIVES)
	@echo "  LD      $@"
	@$(CC) $(ALL_CFLAGS) $(HOST_LDFLAGS) -o $@ $^ $(HOST_LIBS)

$(BUILD)/agentbox-agent: $(AGENT_OBJ)
	@echo "  LD      $@ (static)"
	@$(CC) $(ALL_CFLAGS) -static-pie -Wl,-z,relro,-z,now,-z,noexecstack -o $@ $^

# The sidecar services (cli/services-main.c: egress proxy, credential proxy,
# preview bridge by their t3-* names) as one static-pie file for an image
# that holds nothing else: the same layer archives, linked against the
# Debian -dev packages' libssl.a, libcrypto.a, libevent_core.a and
# libjansson.a (libseccomp is not needed: only tools/gen-seccomp uses it).
# Names resolve through static glibc's built-in files and dns NSS sources
# (docs/images.md); the linker's warnings about getaddrinfo and dlopen say
# so, and are filtered here.
STATIC_SERVICES_LIBS := -ljansson -levent_core -lssl -lcrypto -lpthread
static-services: $(BUILD)/agentbox-services-static
$(BUILD)/agentbox-services-static: $(BUILD)/obj/src/cli/services-main.o $(HOST_ARCHIVES)
	@echo "  LD      $@ (static)"
	@$(CC) $(ALL_CFLAGS) -static-pie -s -Wl,-z,relro,-z,now,-z,noexecstack -o $@.tmp $^ \
		$(STATIC_SERVICES_LIBS) 2>$@.log || { cat $@.log; rm -f $@.tmp; exit 1; }
	@grep -v -e 'in statically linked applications requires at runtime' -e ': in function ' \
		$@.log >&2 || true
	@rm -f $@.log && mv $@.tmp $@

$(BUILD)/obj/%.o: %.c | $(GEN)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/agent-obj/%.o: %.c | $(GEN)
	@mkdir -p $(@D)
	@echo "  CC      $< (agent)"
	@$(CC) $(ALL_CFLAGS) -DAB_AGENT -c -o $@ $<

# Preloaded into commands under gVisor (tools/statx-shim.c).
$(BUILD)/agentbox-statx-shim.so: tools/statx-shim.c
	@mkdir -p $(@D)
	@echo "  LD      $@ (shared)"
	@$(CC) $(ALL_CFLAGS) -Wno-missing-prototypes -shared -fPIC -o $@ $< -ldl

# The default seccomp filter is compiled to BPF at build time with libseccomp
# and embedded in the agent, which installs it without any library.
$(BUILD)/tools/gen-seccomp: tools/gen-seccomp.c src/isolate/seccomp-profile.c src/isolate/seccomp-profile.h
	@mkdir -p $(@D)
	@echo "  CC      $@"
	@$(CC) $(ALL_CFLAGS) -o $@ tools/gen-seccomp.c src/isolate/seccomp-profile.c -lseccomp

$(GEN): $(BUILD)/tools/gen-seccomp
	@mkdir -p $(@D)
	@echo "  GEN     $@"
	@$< > $@.tmp && mv $@.tmp $@

# Unit tests and helpers link the layer archives in the same order.
$(BUILD)/tests/test-%: tests/unit/test-%.c $(HOST_ARCHIVES)
	@mkdir -p $(@D)
	@echo "  TEST    $@"
	@$(CC) $(ALL_CFLAGS) -o $@ $(filter %.c %.a,$^) -lcmocka $(HOST_LIBS)

# Helpers built on the host libraries (agentctl and egressctl drive the agent client).
$(BUILD)/tests/agentctl $(BUILD)/tests/egressctl: $(BUILD)/tests/%: tests/helpers/%.c $(HOST_ARCHIVES)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(HOST_LDFLAGS) -o $@ $(filter %.c %.a,$^) $(HOST_LIBS)

$(BUILD)/tests/%: tests/helpers/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -o $@ $<

deps:
	scripts/install-deps build test microvm npm

helpers: $(HELPER_BIN)
unit-bins: $(UNIT_BIN)

unit: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $$t; done

# Unit tests again under AddressSanitizer and UndefinedBehaviorSanitizer
# (asan-bins only builds them: tests/check runs them itself).
ASAN_MAKE = $(MAKE) BUILD=$(BUILD)/asan LDFLAGS="-fsanitize=address,undefined" \
	CFLAGS="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
unit-asan:
	$(ASAN_MAKE) unit
asan-bins:
	$(ASAN_MAKE) unit-bins

integration: all $(HELPER_BIN)
	scripts/install-deps npm
	AGENTBOX=$(abspath $(BUILD)/agentbox) HELPERS=$(abspath $(BUILD)/tests) AGENTBOX_BACKEND=native \
		bats --print-output-on-failure tests/integration

# The microVM guest (vmlinux + an initramfs whose /init is the agent) from
# Debian's linux-image-amd64, into /var/lib/agentbox/guest (or
# $AGENTBOX_GUEST_DIR).
guest: all
	scripts/install-deps microvm
	scripts/build-guest --agent $(BUILD)/agentbox-agent

# The conformance and attack suites once more per backend (gVisor, Docker
# when a test dockerd starts, native over protocol v2).
conformance: all $(HELPER_BIN)
	tests/conformance-all $(BUILD)

# gcc and clang must both build the tree without a warning.
clang-build:
	$(MAKE) BUILD=$(BUILD)/clang CC=clang-14 all

check: deps
	tests/check $(BUILD)

.PHONY: layers fuzz
# Every #include edge in src/ against the layer table in docs/architecture.md.
layers:
	scripts/check-layers

# libFuzzer harnesses (tests/fuzz/fuzz-NAME.c), each run for FUZZ_SECONDS on
# a temporary copy of tests/fuzz/corpus/NAME.  The host sources are built
# again with clang-14 and coverage instrumentation into layer archives of
# their own ($(FUZZ_BUILD)/lib, same order); each harness links only the
# objects it needs from them.
FUZZ_CC      := clang-14
FUZZ_SECONDS ?= 10
FUZZ_BUILD   := $(BUILD)/fuzz
FUZZ_CFLAGS  := -std=gnu11 -D_GNU_SOURCE $(WARN) -Wno-unknown-warning-option -Isrc -I$(BUILD)/gen \
	-g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all -MMD -MP
FUZZ_BIN     := $(patsubst tests/fuzz/%.c,$(FUZZ_BUILD)/%,$(wildcard tests/fuzz/fuzz-*.c))

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	@echo "  CC      $< (fuzz)"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

FUZZ_ARCHIVES := $(foreach l,$(HOST_LAYERS),$(FUZZ_BUILD)/lib/libab-$(l).a)
$(eval $(call layer_archives,$(FUZZ_BUILD)/obj,$(FUZZ_BUILD)/lib))

$(FUZZ_BUILD)/fuzz-%: tests/fuzz/fuzz-%.c $(FUZZ_ARCHIVES)
	@echo "  LD      $@"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $(filter %.c %.a,$^) $(HOST_LIBS)

fuzz: $(FUZZ_BIN)
	@set -e; for f in $(FUZZ_BIN); do \
		name=$${f##*/fuzz-}; corpus=$$(mktemp -d); \
		if [ -d tests/fuzz/corpus/$$name ]; then cp -r tests/fuzz/corpus/$$name/. $$corpus/; fi; \
		echo "  FUZZ    $$name ($(FUZZ_SECONDS) s)"; \
		if ! $$f -max_total_time=$(FUZZ_SECONDS) -timeout=5 -max_len=4096 \
			-artifact_prefix=$(FUZZ_BUILD)/crash-$$name- $$corpus > $(FUZZ_BUILD)/$$name.log 2>&1; then \
			tail -n 40 $(FUZZ_BUILD)/$$name.log; rm -rf $$corpus; \
			echo "fuzz: $$name failed; input in $(FUZZ_BUILD)/crash-$$name-*"; exit 1; fi; \
		grep -h '^Done' $(FUZZ_BUILD)/$$name.log | sed 's/^/          /'; rm -rf $$corpus; \
	done

demo:
	scripts/install-deps build
	$(MAKE) all
	scripts/demo $(BUILD)/agentbox

# Benchmarks: each prints its figures next to a reference tool run in the
# same invocation (bwrap and unshare, host fork+exec, nginx direct and
# tinyproxy, a direct TLS upstream); none fails a build.
bench:
	scripts/install-deps build test bench npm
	$(MAKE) all $(HELPER_BIN)
	bench/run-all $(BUILD)/agentbox

install: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BUILD)/agentbox $(DESTDIR)$(PREFIX)/bin/agentbox
	install -m 0755 $(BUILD)/agentbox-full $(DESTDIR)$(PREFIX)/bin/agentbox-full
	install -m 0755 $(BUILD)/agentbox-agent $(DESTDIR)$(PREFIX)/bin/agentbox-agent
	install -m 0644 $(BUILD)/agentbox-statx-shim.so $(DESTDIR)$(PREFIX)/bin/agentbox-statx-shim.so
	for alias in t3-egress-proxy t3-credential-proxy t3-preview-bridge agentbox-runc; do \
		ln -sf agentbox $(DESTDIR)$(PREFIX)/bin/$$alias; done

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

format-check:
	clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
