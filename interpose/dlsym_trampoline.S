/* SPDX-License-Identifier: Apache-2.0 */
/* dlsym, as exported by libcudasnap.so.
 *
 * Lookups that cudasnap does not redirect must reach the next dlsym with the program's own return
 * address on the stack: glibc resolves RTLD_NEXT relative to the caller of dlsym, so a forward by
 * an ordinary call would make RTLD_NEXT lookups resolve relative to cudasnap (interposition.md
 * section 4.2, pitfall 1). C cannot promise a tail call, so the entry is written here:
 *
 *   target = cs_dlsym_forward_target(handle, name, return address)
 *   target ? jump to target (the next dlsym)  :  jump to cs_dlsym_redirect(handle, name)
 */
#if defined(__x86_64__)
        .text
        .globl  dlsym
        .type   dlsym, @function
        .globl  cs_dlsym_entry          /* the same address, hidden: how cudasnap names its own */
        .hidden cs_dlsym_entry          /* dlsym without going through the symbol table */
dlsym:
cs_dlsym_entry:
        .cfi_startproc
        movq    (%rsp), %rdx            /* the caller's return address */
        pushq   %rdi
        .cfi_adjust_cfa_offset 8
        pushq   %rsi
        .cfi_adjust_cfa_offset 8
        subq    $8, %rsp                /* keep the stack 16-byte aligned at the call */
        .cfi_adjust_cfa_offset 8
        call    cs_dlsym_forward_target
        addq    $8, %rsp
        .cfi_adjust_cfa_offset -8
        popq    %rsi
        .cfi_adjust_cfa_offset -8
        popq    %rdi
        .cfi_adjust_cfa_offset -8
        testq   %rax, %rax
        jz      1f
        jmp     *%rax
1:      jmp     cs_dlsym_redirect
        .cfi_endproc
        .size   dlsym, .-dlsym
#elif defined(__aarch64__)
        .text
        .globl  dlsym
        .type   dlsym, %function
        .globl  cs_dlsym_entry
        .hidden cs_dlsym_entry
dlsym:
cs_dlsym_entry:
        .cfi_startproc
        stp     x29, x30, [sp, #-32]!
        .cfi_def_cfa_offset 32
        .cfi_offset 29, -32
        .cfi_offset 30, -24
        mov     x29, sp
        stp     x0, x1, [sp, #16]
        mov     x2, x30                 /* the caller's return address */
        bl      cs_dlsym_forward_target
        mov     x16, x0
        ldp     x0, x1, [sp, #16]
        ldp     x29, x30, [sp], #32
        .cfi_def_cfa_offset 0
        cbz     x16, 1f
        br      x16
1:      b       cs_dlsym_redirect
        .cfi_endproc
        .size   dlsym, .-dlsym
#else
#error "cudasnap: dlsym trampoline for x86-64 and aarch64 only"
#endif
        .section .note.GNU-stack, "", @progbits
