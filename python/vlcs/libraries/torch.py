"""PyTorch's ATen intra-op thread pool (libtorch_cpu)."""

from __future__ import annotations

from vlcs.libraries._base import LibraryController


class Torch(LibraryController):
    name = "torch"
    user_api = "torch"
    filename_prefixes = ("libtorch_cpu",)
    env_var = "OMP_NUM_THREADS"
    # at::get_num_threads() / at::set_num_threads(int), as the C++ ABI spells them
    get_threads = ("_ZN2at15get_num_threadsEv",)
    set_threads = ("_ZN2at15set_num_threadsEi",)
    elastic = (
        "intra-op teams sized by the current CPUs (its OpenMP, OMP_DYNAMIC); "
        "get_num_threads() reports the bound"
    )
