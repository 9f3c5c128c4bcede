"""Shares a type per interpreter the way Cython 3.0 shares its function and
coroutine types: in a module made with PyImport_AddModule, read with
PyObject_GetAttrString and created only when that raises AttributeError."""

import ctypes

_api = ctypes.pythonapi
# PyImport_AddModule returns a borrowed reference, which ctypes would take
# as new for a py_object result: take the address and borrow it properly.
_api.PyImport_AddModule.restype = ctypes.c_void_p
_api.PyImport_AddModule.argtypes = [ctypes.c_char_p]
_api.PyObject_GetAttrString.restype = ctypes.py_object
_api.PyObject_GetAttrString.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyObject_SetAttrString.argtypes = [ctypes.py_object, ctypes.c_char_p, ctypes.py_object]

ABI = "_vlcs_test_abi_0_1"
_abi = ctypes.cast(_api.PyImport_AddModule(ABI.encode()), ctypes.py_object).value
try:
    shared_type = _api.PyObject_GetAttrString(_abi, b"function_type")
except AttributeError:
    shared_type = type("function_type", (), {})
    _api.PyObject_SetAttrString(_abi, b"function_type", shared_type)
