// Case 3: a C++ application as it is today, linked against OpenBLAS.
#include "adopt_work.h"

extern "C" void dgesv_(const int *, const int *, double *, const int *, int *, double *,
                       const int *, int *);

int main(int argc, char **argv)
{
    return solve_all(dgesv_, argc, argv);
}
