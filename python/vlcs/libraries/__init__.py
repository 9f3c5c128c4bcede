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
>>> vlcs.register(Foo)

Families known here: OpenBLAS, OpenMP (libgomp, libiomp, LLVM's libomp),
MKL, torch (ATen's intra-op pool), oneTBB, and the Python binding
generators pybind11, nanobind and Cython.  The C side's per-library hooks
(oneTBB arenas, CUDA/HIP devices on enter) live in src/ (see src/README.md).
"""

from vlcs.libraries._base import LibraryController, controllers, register, registry_keys
from vlcs.libraries.bindings import Cython, Nanobind, Pybind11
from vlcs.libraries.mkl import MKL
from vlcs.libraries.openblas import OpenBLAS
from vlcs.libraries.openmp import OpenMP
from vlcs.libraries.tbb import TBB
from vlcs.libraries.torch import Torch

for _cls in (OpenBLAS, OpenMP, MKL, Torch, TBB, Pybind11, Nanobind, Cython):
    register(_cls)

__all__ = ["LibraryController", "controllers", "register", "registry_keys"]
