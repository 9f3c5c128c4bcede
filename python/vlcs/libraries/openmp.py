"""OpenMP runtimes: GNU libgomp, Intel libiomp5, LLVM libomp."""

from __future__ import annotations

from vlcs.libraries._base import LibraryController


class OpenMP(LibraryController):
    name = "openmp"
    user_api = "openmp"
    filename_prefixes = ("libgomp", "libiomp", "libomp")
    env_var = "OMP_NUM_THREADS"
    get_threads = ("omp_get_max_threads",)
    # the calling thread's nthreads-var: regions it starts later use n threads
    set_threads = ("omp_set_num_threads",)
    threads_per = "thread"
    elastic = (
        "teams sized by the current CPUs (OMP_DYNAMIC); omp_get_max_threads() reports the bound"
    )
