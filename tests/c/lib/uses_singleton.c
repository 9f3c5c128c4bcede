/* A library that depends on the singleton (DT_NEEDED libvlcs_singleton.so):
 * loaded in a context, it binds to whatever provides that soname there. */
extern int singleton_value;
int singleton_bump(void);
int uses_bump(void) { return singleton_bump(); }
int *uses_value_addr(void) { return &singleton_value; }
