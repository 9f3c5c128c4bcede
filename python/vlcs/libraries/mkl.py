"""Intel oneMKL: its single dynamic library (libmkl_rt), or its layered
libraries that applications and MKL builds of numpy link (an interface
library, which exports the service calls, a threading one and libmkl_core).

Its file names and symbols (MKL_Get_Max_Threads, MKL_Set_Num_Threads) are
its row of libvlcs's table of families (src/families.c)."""

from __future__ import annotations

from vlcs.libraries._base import LibraryController


class MKL(LibraryController):
    name = "mkl"
    user_api = "blas"
    one_per_context = True
    env_var = "MKL_NUM_THREADS"
    threads_per = "thread"
    elastic = "resized by vlcs to the current CPUs (MKL_Set_Num_Threads)"
