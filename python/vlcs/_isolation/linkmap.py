"""Walking a linker namespace's list of objects (glibc's struct link_map)."""

from __future__ import annotations

import ctypes
import os
import re


class _LinkMap(ctypes.Structure):
    pass


# The public head of glibc's struct link_map (<link.h>).
_LinkMap._fields_ = [
    ("l_addr", ctypes.c_void_p),
    ("l_name", ctypes.c_char_p),
    ("l_ld", ctypes.c_void_p),
    ("l_next", ctypes.POINTER(_LinkMap)),
    ("l_prev", ctypes.POINTER(_LinkMap)),
]


# The objects vlcs makes in memory are loaded from /proc/PID/fd/N (the
# process's pid then: a forked child keeps its parent's in the names).
_FD_NAME = re.compile(r"/proc/(?:self|\d+)/fd/\d+")


def made_in_memory(name: str) -> bool:
    """Whether an object's name is that of one vlcs made in memory."""
    return _FD_NAME.fullmatch(name) is not None


def namespace_objects(handle: int) -> list[str]:
    """Paths of every object in the namespace of `handle` (a dlopen/dlmopen
    handle, which glibc makes a link_map pointer), in load order."""
    lm = ctypes.cast(handle, ctypes.POINTER(_LinkMap))
    while lm.contents.l_prev:
        lm = lm.contents.l_prev
    out = []
    while lm:
        name = lm.contents.l_name
        if name:
            out.append(name.decode(errors="replace"))
        lm = lm.contents.l_next
    return out


def namespace_files(handle: int) -> dict[str, str]:
    """The namespace's objects loaded from files, real path -> name as
    loaded.  The objects vlcs makes in memory are left out: they are named
    /proc/PID/fd/N after a descriptor long closed, whose number another
    file (one a thread is loading now) may hold, so their real path would
    be a lie."""
    return {os.path.realpath(p): p for p in namespace_objects(handle) if not made_in_memory(p)}


def namespace_root(handle: int) -> int:
    """The first object of the namespace of `handle`, as a handle: in a
    context's namespace, the root whose dependencies (the interposer, the
    services' forwarders, libc) are the namespace's global scope."""
    lm = ctypes.cast(handle, ctypes.POINTER(_LinkMap))
    while lm.contents.l_prev:
        lm = lm.contents.l_prev
    return ctypes.cast(lm, ctypes.c_void_p).value or handle
