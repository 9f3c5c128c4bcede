/* One link of a chain of libraries, each needing the next (CHAIN_AT from 0
 * to CHAIN_LAST): a load's tree longer than vlcs's first guess of its size
 * (test_copies). */
#define JOIN2(a, b) a##b
#define JOIN(a, b) JOIN2(a, b)

static int calls;

#if CHAIN_AT < CHAIN_LAST
int JOIN(chain_, CHAIN_NEXT)(void);
int JOIN(chain_, CHAIN_AT)(void) { return ++calls + JOIN(chain_, CHAIN_NEXT)(); }
#else
int JOIN(chain_, CHAIN_AT)(void) { return ++calls; }
#endif
