"""Intel oneMKL: its single dynamic library (libmkl_rt), or its layered
libraries that applications and MKL builds of numpy link (an interface
library, which exports the service calls, a threading one and libmkl_core)."""

from __future__ import annotations

from vlcs.libraries._base import LibraryController


class MKL(LibraryController):
    name = "mkl"
    user_api = "blas"
    filename_prefixes = (
        "libmkl_rt",
        "libmkl_intel_lp64",
        "libmkl_intel_ilp64",
        "libmkl_gf_lp64",
        "libmkl_gf_ilp64",
    )
    one_per_context = True
    env_var = "MKL_NUM_THREADS"
    get_threads = ("MKL_Get_Max_Threads",)
    set_threads = ("MKL_Set_Num_Threads",)
    threads_per = "thread"
    elastic = "resized by vlcs to the current CPUs (MKL_Set_Num_Threads)"
