"""OpenBLAS (Debian's, numpy's and scipy's scipy_openblas builds).

Its file names, thread-count symbols (every spelling: ILP64 ``64_``,
scipy's ``scipy_``) and pool stopper are its row of libvlcs's table of
families (src/families.c)."""

from __future__ import annotations

from vlcs.libraries._base import LibraryController


class OpenBLAS(LibraryController):
    name = "openblas"
    user_api = "blas"
    env_var = "OPENBLAS_NUM_THREADS"
    elastic = "resized by vlcs to the current CPUs (openblas_set_num_threads)"
