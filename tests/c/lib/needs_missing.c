/* A library whose dependency loads (libvlcs_singleton.so) but which needs a
 * function nothing defines: a load of it fails after its dependency was
 * found and mapped (test_rollback). */
int singleton_bump(void);
int vlcs_test_nowhere(void);
int needs_missing(void) { return singleton_bump() + vlcs_test_nowhere(); }
