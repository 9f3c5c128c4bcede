"""Loads a library with ctypes at call time, as llvmlite and torch do."""

import ctypes


def omp_max_threads() -> int:
    return ctypes.CDLL("libgomp.so.1").omp_get_max_threads()
