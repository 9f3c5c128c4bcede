"""What vlcs knows about particular libraries, one small class per family.

A context needs three things from a library it does not own: how to
recognise it among the objects of a namespace, how to read and set its
thread count from inside the context, and what of it must stay shared or be
kept apart per owner.  Each family answers them in a subclass of
:class:`LibraryController` (the shape of threadpoolctl's controllers), and
:func:`register` adds one, so users can teach vlcs their own libraries:

>>> import vlcs
>>> class Foo(vlcs.LibraryController):
...     name, user_api, filename_prefixes = "foo", "foo", ("libfoo",)
...     get_threads, set_threads = ("foo_get_threads",), ("foo_set_threads",)
...     stop_pool = ("foo_shutdown",)
>>> vlcs.register(Foo)

:func:`register` gives the family a row in libvlcs's table of families too
(src/families.c, where the built-in families' C-side knowledge lives):
elastic contexts resize its pool and destroying a context stops it.

Families known here: OpenBLAS, OpenMP (libgomp, libiomp, LLVM's libomp),
MKL, torch (ATen's intra-op pool), oneTBB, and the Python binding
generators pybind11, nanobind and Cython.  The C side's per-library hooks
(oneTBB arenas, CUDA/HIP devices on enter) hang on the same rows (see
src/README.md).
"""

from vlcs._lib import families
from vlcs.libraries._base import (
    LibraryController,
    bind_builtin,
    controllers,
    register,
    registry_keys,
)
from vlcs.libraries.bindings import Cython, Nanobind, Pybind11
from vlcs.libraries.mkl import MKL
from vlcs.libraries.openblas import OpenBLAS
from vlcs.libraries.openmp import OpenMP
from vlcs.libraries.tbb import TBB
from vlcs.libraries.torch import Torch


def _c_rows() -> dict:
    try:
        return families()
    except OSError:  # libvlcs missing: nothing can be loaded into contexts anyway
        return {}


_rows = _c_rows()
for _cls in (OpenBLAS, OpenMP, MKL, Torch, TBB, Pybind11, Nanobind, Cython):
    bind_builtin(_cls, _rows)
    register(_cls)

__all__ = ["LibraryController", "controllers", "register", "registry_keys"]
