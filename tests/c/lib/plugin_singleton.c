/* Uses the singleton without naming it in DT_NEEDED, as Python extension
 * modules use libpython and plugins use their host: its symbols must come
 * from the namespace's global scope. */
int singleton_bump(void);
int plugin_bump(void) { return singleton_bump(); }
