#if defined(__x86_64__)
/* x86-64 entry stubs (System V ABI).
 *
 * dlsym: glibc's dlsym finds RTLD_NEXT relative to its *return address*. A C wrapper that
 * calls the real dlsym would make every RTLD_NEXT lookup in the process relative to
 * libtcfuse.so, breaking other interposers (a preloaded malloc that looks up the "next"
 * malloc would find itself). So names not starting with "cu" tail-jump into glibc with the
 * caller's frame untouched; only driver names take the C path (tcf_dlsym_cuda).
 *
 * Trampolines: TCF_TRAMP_SLOTS identical 16-byte stubs. Stub i loads i into %r11 (a
 * scratch register no argument uses) and jumps to the common body, which saves every
 * argument register (integer and vector, and %rax for variadic callees), asks
 * tcf_tramp_enter(i) for the real function (closing windows on the way), restores the
 * registers and jumps to it. The stack is exactly as the caller left it at the jump, so
 * arguments passed on the stack and the return address reach the real function intact:
 * one stub serves every prototype.
 */
#include "interpose/tramp.h"

    .text

    .globl  dlsym
    .type   dlsym, @function
dlsym:
    test    %rsi, %rsi
    jz      1f
    cmpb    $'c', (%rsi)
    jne     1f
    cmpb    $'u', 1(%rsi)
    jne     1f
    /* Driver entry points are cu + an upper-case letter; cudnn*, cublas*, cuda* are not
     * the driver's and go straight to glibc too. */
    movzbl  2(%rsi), %eax
    sub     $'A', %eax
    cmp     $25, %eax
    ja      1f
    jmp     tcf_dlsym_cuda
1:  mov     tcf_dlsym_next(%rip), %rax
    test    %rax, %rax
    jz      2f
    jmp     *%rax
2:  jmp     tcf_dlsym_slow
    .size   dlsym, .-dlsym

    .globl  tcf_tramp_common
    .hidden tcf_tramp_common
    .type   tcf_tramp_common, @function
tcf_tramp_common:
    push    %rbp
    mov     %rsp, %rbp
    push    %rdi
    push    %rsi
    push    %rdx
    push    %rcx
    push    %r8
    push    %r9
    push    %rax
    sub     $136, %rsp          /* 8 vector registers + 8 to realign to 16 for the call */
    movdqu  %xmm0, 0(%rsp)
    movdqu  %xmm1, 16(%rsp)
    movdqu  %xmm2, 32(%rsp)
    movdqu  %xmm3, 48(%rsp)
    movdqu  %xmm4, 64(%rsp)
    movdqu  %xmm5, 80(%rsp)
    movdqu  %xmm6, 96(%rsp)
    movdqu  %xmm7, 112(%rsp)
    mov     %r11, %rdi
    call    tcf_tramp_enter
    mov     %rax, %r11
    movdqu  0(%rsp), %xmm0
    movdqu  16(%rsp), %xmm1
    movdqu  32(%rsp), %xmm2
    movdqu  48(%rsp), %xmm3
    movdqu  64(%rsp), %xmm4
    movdqu  80(%rsp), %xmm5
    movdqu  96(%rsp), %xmm6
    movdqu  112(%rsp), %xmm7
    add     $136, %rsp
    pop     %rax
    pop     %r9
    pop     %r8
    pop     %rcx
    pop     %rdx
    pop     %rsi
    pop     %rdi
    pop     %rbp
    jmp     *%r11
    .size   tcf_tramp_common, .-tcf_tramp_common

    .balign 16
    .globl  tcf_tramp_stubs
    .hidden tcf_tramp_stubs
tcf_tramp_stubs:
    .set    tcf_slot, 0
    .rept   TCF_TRAMP_SLOTS
    .balign TCF_TRAMP_STUB_BYTES
    mov     $tcf_slot, %r11d
    jmp     tcf_tramp_common
    .set    tcf_slot, tcf_slot + 1
    .endr

/* Boundaries exported under their ABI names (hooks.def TCF_GATE_ABI): fixed slots after
 * the pool, numbered in table order; tramp.c resolves their real functions on first use. */
    .set    tcf_fixed, TCF_TRAMP_SLOTS
#define TCF_WRAP(abi, base, since, ptds, cls, params, args)
#define TCF_GATE(base)
#define TCF_PASS(base)
#define TCF_GATE_ABI(abi, base)     \
    .globl  abi;                    \
    .type   abi, @function;         \
    .balign 16;                     \
abi:                                \
    mov     $tcf_fixed, %r11d;      \
    jmp     tcf_tramp_common;       \
    .size   abi, .-abi;             \
    .set    tcf_fixed, tcf_fixed + 1;
#include "interpose/hooks.def"

    .section .note.GNU-stack, "", @progbits
#endif
