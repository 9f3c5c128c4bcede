// Case 3: the same application moved into one context (all CPUs).
#include "adopt_work.h"
#include "vlcs.hpp"

int main(int argc, char **argv)
{
    vlcs::Context ctx("app");
    vlcs::Loader blas(ctx, "libopenblas.so.0");
    auto dgesv = blas.sym<dgesv_t>("dgesv_");
    auto inside = ctx.enter();
    return solve_all(dgesv, argc, argv);
}
