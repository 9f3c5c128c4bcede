"""A pure-Python package whose functions import at call time, as numpy's and
scipy's do: the tests check those imports stay in the caller's context."""

import threading

STATE = {"imported_in": None}


def which_numpy():
    import numpy  # a function-level import

    return numpy


def submodule():
    import importlib

    return importlib.import_module("lazypkg.sub")


def which_numpy_from_thread():
    out = []
    t = threading.Thread(target=lambda: out.append(which_numpy()))
    t.start()
    t.join()
    return out[0]
