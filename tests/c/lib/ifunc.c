/* A library with an IFUNC whose resolver runs while ld.so relocates it,
 * inside dlopen (a pointer to it in its own data: a relocation against the
 * IFUNC symbol): copy mode must copy its code before, not after.  The
 * resolver spans pages of code of its own, as a large library's would:
 * pages a copy without its code would leave out. */
static int answer_generic(void) { return 7; }
#if defined(__x86_64__)
#define OVER_PAGES "jmp 1f\n.skip 8192, 0xcc\n1:\n"
#else
#define OVER_PAGES "b 1f\n.skip 8192, 0\n1:\n"
#endif
__attribute__((aligned(4096), noinline)) static int (*resolve_answer(void))(void)
{
    __asm__ volatile(OVER_PAGES);
    return answer_generic;
}
int ifunc_answer(void) __attribute__((ifunc("resolve_answer")));
int (*volatile ifunc_pointer)(void) = ifunc_answer;
int ifunc_through_pointer(void) { return ifunc_pointer(); }
