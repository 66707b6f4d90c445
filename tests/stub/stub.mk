# The stand-in driver (build/stub/libcuda.so.1) and the programs the BATS suites run
# under LD_PRELOAD=build/libtcfuse.so. Included by the top Makefile; `make stub` builds
# all of it. Objects go through the top Makefile's $(BUILD)/obj/%.o rule (ALL_CFLAGS,
# dependency files included). The stub is linked -Bsymbolic: the pointers its
# cuGetProcAddress hands out must be its own functions, not libtcfuse.so's exports of
# the same names (which would win the lookup of an interposable reference).

STUB_DIR   := $(BUILD)/stub
STUB_SRC   := $(wildcard tests/stub/fakecuda*.c)
STUB_OBJ   := $(STUB_SRC:%.c=$(BUILD)/obj/%.o)
STUB_LIB   := $(STUB_DIR)/libcuda.so.1
PROG_LIB   := $(BUILD)/obj/tests/stub/progs/common.o
# Programs that find the driver with dlopen; `linked` is linked against it instead.
PROG_SRC   := $(filter-out tests/stub/progs/common.c tests/stub/progs/linked.c, \
                $(wildcard tests/stub/progs/*.c))
PROG_BIN   := $(PROG_SRC:tests/stub/progs/%.c=$(STUB_DIR)/progs/%)
LINKED_BIN := $(STUB_DIR)/progs/linked $(STUB_DIR)/progs/linked_ptsz

# Keep the objects: make would delete them as intermediates of the pattern rules.
.SECONDARY: $(STUB_OBJ) $(PROG_LIB) $(PROG_SRC:%.c=$(BUILD)/obj/%.o) \
            $(BUILD)/obj/tests/stub/progs/linked.o $(BUILD)/obj/tests/stub/progs/linked_ptsz.o

.PHONY: stub
stub: $(STUB_LIB) $(STUB_DIR)/libcuda.so $(PROG_BIN) $(LINKED_BIN)

$(STUB_LIB): $(STUB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-z,defs -Wl,-Bsymbolic -Wl,-soname,libcuda.so.1 -o $@ $^ $(LDLIBS)

$(STUB_DIR)/libcuda.so: $(STUB_LIB)
	ln -sf libcuda.so.1 $@

$(STUB_DIR)/progs/%: $(BUILD)/obj/tests/stub/progs/%.o $(PROG_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDLIBS)

$(STUB_DIR)/progs/linked: $(BUILD)/obj/tests/stub/progs/linked.o $(STUB_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) -o $@ $< -L$(STUB_DIR) -lcuda $(LDLIBS)

$(BUILD)/obj/tests/stub/progs/linked_ptsz.o: tests/stub/progs/linked.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DCUDA_API_PER_THREAD_DEFAULT_STREAM=1 -c $< -o $@

$(STUB_DIR)/progs/linked_ptsz: $(BUILD)/obj/tests/stub/progs/linked_ptsz.o $(STUB_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) -o $@ $< -L$(STUB_DIR) -lcuda $(LDLIBS)
