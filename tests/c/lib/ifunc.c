/* A library with an IFUNC: its resolver runs while ld.so relocates it,
 * inside dlopen (copy mode must copy its code before, not after). */
static int answer_generic(void) { return 7; }
static int (*resolve_answer(void))(void) { return answer_generic; }
int ifunc_answer(void) __attribute__((ifunc("resolve_answer")));
