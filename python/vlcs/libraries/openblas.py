"""OpenBLAS (Debian's, numpy's and scipy's scipy_openblas builds)."""

from __future__ import annotations

from vlcs.libraries._base import LibraryController


def _names(fn: str) -> tuple[str, ...]:
    # ILP64 builds suffix their API with 64_; scipy's wheels prefix scipy_.
    return tuple(p + fn + s for p in ("", "scipy_") for s in ("", "64_"))


class OpenBLAS(LibraryController):
    name = "openblas"
    user_api = "blas"
    filename_prefixes = ("libopenblas", "libscipy_openblas")
    env_var = "OPENBLAS_NUM_THREADS"
    get_threads = _names("openblas_get_num_threads")
    set_threads = _names("openblas_set_num_threads")
    elastic = "resized by vlcs to the current CPUs (openblas_set_num_threads)"
