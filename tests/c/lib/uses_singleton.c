/* A library that depends on the singleton (DT_NEEDED libvlcs_singleton.so):
 * loaded in a context, it binds to whatever provides that soname there. */
extern int singleton_value;
int singleton_bump(void);
int singleton_ready(void);
int uses_bump(void) { return singleton_bump(); }
int *uses_value_addr(void) { return &singleton_value; }

/* Its constructors as a loader must run them (copy mode runs them itself
 * for copies it loads without their code): DT_INIT (linked with -init)
 * before DT_INIT_ARRAY, both after the dependency's, given argc, argv and
 * the environment. */
static int dt_init_ran, seen;
void uses_dt_init(void) { dt_init_ran = 1; }
__attribute__((constructor)) static void uses_init(int argc, char **argv, char **envp)
{
    seen = (singleton_ready() ? 1 : 0) | (dt_init_ran ? 2 : 0) |
           (argc > 0 && argv != 0 && argv[0] != 0 && envp != 0 ? 4 : 0);
}
int uses_constructors_seen(void) { return seen; }
