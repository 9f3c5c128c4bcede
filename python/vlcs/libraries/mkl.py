"""Intel oneMKL through its single dynamic library (libmkl_rt)."""

from __future__ import annotations

from vlcs.libraries._base import LibraryController


class MKL(LibraryController):
    name = "mkl"
    user_api = "blas"
    filename_prefixes = ("libmkl_rt",)
    env_var = "MKL_NUM_THREADS"
    get_threads = ("MKL_Get_Max_Threads",)
    set_threads = ("MKL_Set_Num_Threads",)
