# tcfuse build. `make` builds the preload library and the command; `make test` runs
# every CPU test (tests/run does the same and first installs what the tests need).
#
# Layout of the link:
#   build/libtcfuse.so  interpose/ + every layer below it (docs/ARCHITECTURE.md, Layers):
#                       replay/ exec/ capture/ recognize/ fuser/ codegen/ cache/ trace/
#                       config/ base/
#   build/libtcfuse.a   all of those but interpose/       (for tests and tools)
#   build/tcfuse        tools/ + libtcfuse.a              (the command)
# Nothing links against CUDA: cuda.h supplies types only, libraries are found at run time.

CUDA_HOME ?= /usr/local/cuda
CC        ?= cc
BUILD     ?= build

WARN      := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
             -Wno-unused-parameter
CFLAGS    ?= -O2 -g
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE -fPIC -fvisibility=hidden $(WARN) $(CFLAGS) \
             -I. -I$(CUDA_HOME)/include -MMD -MP
LDLIBS    := -Wl,--as-needed -ldl -lpthread

PURE_SRC  := $(wildcard base/*.c config/*.c trace/*.c recognize/*.c capture/*.c exec/*.c \
                       replay/*.c fuser/*.c codegen/*.c cache/*.c)
HOOK_SRC  := $(wildcard interpose/*.c)
HOOK_ASM  := $(wildcard interpose/*.S)
TOOL_SRC  := $(wildcard tools/*.c)
UNIT_SRC  := $(wildcard tests/unit/test_*.c)

PURE_OBJ  := $(PURE_SRC:%.c=$(BUILD)/obj/%.o)
HOOK_OBJ  := $(HOOK_SRC:%.c=$(BUILD)/obj/%.o) $(HOOK_ASM:%.S=$(BUILD)/obj/%.o)
TOOL_OBJ  := $(TOOL_SRC:%.c=$(BUILD)/obj/%.o)
UNIT_BIN  := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
FUZZ_TGT  := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
UNIT_BIN  += $(FUZZ_TGT:%=$(BUILD)/tests/test_fuzz_%)

.PHONY: all test unit unit-bins bats clean demo asan ubsan tsan
all: $(BUILD)/libtcfuse.so $(BUILD)/tcfuse

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.S
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/libtcfuse.a: $(PURE_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libtcfuse.so: $(HOOK_OBJ) $(PURE_OBJ)
	$(CC) -shared -Wl,-z,defs -Wl,-soname,libtcfuse.so -o $@ $^ $(LDLIBS)

$(BUILD)/tcfuse: $(TOOL_OBJ) $(BUILD)/libtcfuse.a
	$(CC) -o $@ $(TOOL_OBJ) $(BUILD)/libtcfuse.a $(LDLIBS) -lm

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libtcfuse.a tests/unit/check.h tests/unit/fixture_launches.h tests/unit/fixture_kernels.h tests/unit/emu_run.h tests/unit/row_kernels.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(BUILD)/libtcfuse.a $(LDLIBS) -lm

# Each fuzz target replayed over its saved inputs, as a unit test (tests/fuzz/fuzz.h).
$(BUILD)/tests/test_fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c $(BUILD)/libtcfuse.a tests/fuzz/fuzz.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DTCF_FUZZ_TARGET='"$*"' -o $@ tests/fuzz/fuzz_$*.c tests/fuzz/replay.c \
	    $(BUILD)/libtcfuse.a $(LDLIBS) -lm

# libFuzzer runs of every target, FUZZ_SECONDS each (needs clang): the library built with
# coverage and sanitizers in $(BUILD)/fuzz, findings saved under tests/fuzz/regress/.
FUZZ_SECONDS ?= 60
.PHONY: fuzz
fuzz:
	@tests/fuzz/run $(FUZZ_SECONDS) $(FUZZ_TGT)

# A library named like NVRTC, mapped by test_nvrtc_owns.
$(BUILD)/tests/libnvrtc-tcftest.so: tests/unit/fake_nvrtc.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -shared -o $@ $<
$(BUILD)/tests/test_nvrtc_owns: $(BUILD)/tests/libnvrtc-tcftest.so
# The same, with a build-id and without one, for test_images.
$(BUILD)/tests/libtcftest-id.so: tests/unit/fake_nvrtc.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -shared -Wl,--build-id=sha1 -o $@ $<
$(BUILD)/tests/libtcftest-noid.so: tests/unit/fake_nvrtc.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -shared -Wl,--build-id=none -o $@ $<
$(BUILD)/tests/test_images: $(BUILD)/tests/libtcftest-id.so $(BUILD)/tests/libtcftest-noid.so

# Sanitizer builds: the library's objects and the unit tests, built in $(BUILD)/<name> and
# run at once (tests/run runs all three). tcfuse lives in other people's processes: a read
# past a buffer, a signed overflow or a data race there is a bug in theirs.
SAN_asan  := -fsanitize=address -fno-omit-frame-pointer
SAN_ubsan := -fsanitize=undefined -fno-sanitize-recover=all
SAN_tsan  := -fsanitize=thread
asan ubsan tsan:
	@$(MAKE) -s BUILD=$(BUILD)/$@ CFLAGS="-O1 -g $(SAN_$@)" unit-bins
	@tests/unit/run-sanitized $@ $(BUILD)/$@/tests

# valgrind's memcheck over every unit test and over whole processes under the preloaded
# library (tests/unit/run-valgrind): about 8 minutes, so not part of tests/run.
.PHONY: valgrind
valgrind: all stub unit-bins
	@tests/unit/run-valgrind $(BUILD)

# The stand-in driver and the programs the BATS suites run under LD_PRELOAD.
-include tests/stub/stub.mk

unit-bins: $(UNIT_BIN)

unit: $(UNIT_BIN)
	@tests/unit/run $(UNIT_BIN)

bats: all stub
	@bats tests/bats

# Everything CI runs (installs missing packages first): the README's test command.
test:
	@tests/run

# The main job: an example PyTorch program under tcfuse, printing what tcfuse saw.
demo: all
	@tools/demo

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
