"""OpenMP runtimes: GNU libgomp, Intel libiomp5, LLVM libomp.

Its file names and symbols (omp_get_max_threads; omp_set_num_threads, the
calling thread's nthreads-var: regions it starts later use n threads) are
its row of libvlcs's table of families (src/families.c)."""

from __future__ import annotations

from vlcs.libraries._base import LibraryController


class OpenMP(LibraryController):
    name = "openmp"
    user_api = "openmp"
    env_var = "OMP_NUM_THREADS"
    threads_per = "thread"
    elastic = (
        "teams sized by the current CPUs (OMP_DYNAMIC); omp_get_max_threads() reports the bound"
    )
