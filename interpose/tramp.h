/* Shared by tramp.c and tramp_x86_64.S: plain numbers only (the assembler reads it). */
#ifndef TCF_TRAMP_H
#define TCF_TRAMP_H
/* cudart asks cuGetProcAddress for ~500 entry points at start; most are unknown to the
 * table and each distinct one takes a slot. */
#define TCF_TRAMP_SLOTS 2048
#define TCF_TRAMP_STUB_BYTES 16
#endif
