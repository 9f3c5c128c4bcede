"""A context that only runs programs (``vlcs exec``): libvlcs's context and
nothing of what makes a context a home for Python code.

:class:`vlcs.VLC` installs import hooks, views of ``os.environ`` and the
module table, and imports the Python runtimes' machinery with it; a program
run by ``vlcs_ctx_exec`` is native code on a thread of its own and needs
none of that.  Skipping it is most of ``vlcs exec``'s start-up.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterable, Sequence

from vlcs._cpus import to_c
from vlcs._lib import c_string, check, fail, last_error, lib


class ProgramContext:
    """One instance's context: its CPUs, environment and streams, and the
    program it runs.  Not a :class:`vlcs.VLC`: nothing Python runs in it.

    >>> from vlcs._program_context import ProgramContext
    >>> ctx = ProgramContext("tool", [0])
    >>> ctx.exec_program(["true"])
    0
    >>> ctx.close()
    """

    def __init__(self, name: str, cpus: Iterable[int] | str) -> None:
        handle = lib().vlcs_ctx_create(c_string(name, "name"))
        if not handle:
            fail()
        try:
            check(lib().vlcs_ctx_set_cpus(handle, to_c(cpus, "CPU", empty_ok=False)))
        except BaseException:
            lib().vlcs_ctx_destroy(handle)
            raise
        self._handle: int | None = handle

    def setenv(self, name: str, value: str) -> None:
        check(lib().vlcs_ctx_setenv(self._handle, c_string(name, "a name"), c_string(value, name)))

    def set_stdio(self, stdin: int | None, stdout: int | None, stderr: int | None) -> None:
        """Descriptors for the program's streams (duplicated at its load)."""
        fds = [-1 if fd is None else fd for fd in (stdin, stdout, stderr)]
        check(lib().vlcs_ctx_set_stdio(self._handle, *fds))

    def exec_program(self, argv: Sequence[str | os.PathLike[str]]) -> int:
        """Run the program and return its exit status (as VLC.exec_program)."""
        raw = [c_string(a, f"argument {i}", path=True) for i, a in enumerate(argv)]
        array = (ctypes.c_char_p * (len(raw) + 1))(*raw, None)
        return check(lib().vlcs_ctx_exec(self._handle, array))

    def close(self) -> None:
        """Destroy the context; what its program left loaded (a library it
        could not unload) stays, quietly: the run is over."""
        h, self._handle = self._handle, None
        if h is None:
            return
        if lib().vlcs_ctx_destroy(h) < 0:
            raise last_error()
