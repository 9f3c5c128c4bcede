"""PyTorch's ATen intra-op thread pool (libtorch_cpu).

Its file name and symbols (at::get_num_threads() / at::set_num_threads(int),
as the C++ ABI spells them) are its row of libvlcs's table of families
(src/families.c)."""

from __future__ import annotations

from vlcs.libraries._base import LibraryController


class Torch(LibraryController):
    name = "torch"
    user_api = "torch"
    env_var = "OMP_NUM_THREADS"
    elastic = (
        "intra-op teams sized by the current CPUs (its OpenMP, OMP_DYNAMIC); "
        "get_num_threads() reports the bound"
    )
