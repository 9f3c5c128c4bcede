/* A library of a family vlcs does not know until a program registers it:
 * a thread count read and set with 64-bit integers (as BLIS's dim_t), and
 * a pool stopper that counts its calls where the program asks. */
#include <stddef.h>
#include <stdint.h>

static int64_t threads = 7;
static int *stops;

int64_t fam_get_threads(void) { return threads; }
void fam_set_threads(int64_t n) { threads = n; }
void fam_watch_stops(int *counter) { stops = counter; }
void fam_stop_pool(void)
{
    if (stops != NULL)
        ++*stops;
}
