/* A library with process-wide state, as a driver or runtime has. */
int singleton_value = 41;
static int calls;
static int ready;
int singleton_bump(void) { return ++calls; }
int *singleton_value_addr(void) { return &singleton_value; }

/* set by its constructor: a dependant's constructor must find it set */
__attribute__((constructor)) static void singleton_init(void) { ready = 1; }
int singleton_ready(void) { return ready; }
