/* A library with process-wide state, as a driver or runtime has. */
int singleton_value = 41;
static int calls;
int singleton_bump(void) { return ++calls; }
int *singleton_value_addr(void) { return &singleton_value; }
