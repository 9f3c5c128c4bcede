"""vlcs: Virtual Library Contexts for Linux.

This package ships the native runtime (``libvlcs.so``, its headers, the
``vlcs-run`` launcher) and the ``vlcs`` command.  The Python API for contexts
(``vlcs.VLC``) builds on it.

>>> import vlcs
>>> vlcs.__version__
'0.1.0'
>>> (vlcs.native_dir() / "libvlcs.so").exists()
True
"""

from vlcs._lib import VlcsError, init, service, strict_active
from vlcs._paths import include_dir, library_path, native_dir, program_path

__version__ = "0.1.0"

__all__ = [
    "VlcsError",
    "__version__",
    "include_dir",
    "init",
    "library_path",
    "native_dir",
    "program_path",
    "service",
    "strict_active",
]
