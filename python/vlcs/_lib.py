"""The ctypes binding of libvlcs: every C function the package calls, with
its signature, in one place, and the one way failures become exceptions."""

from __future__ import annotations

import ctypes
import functools
import os
import sys
import threading

from vlcs import _errors
from vlcs._errors import ContextFaultError, Limit, VlcsError, error_for
from vlcs._paths import library_file

TYPE_CHECKING = False  # typing is not imported at run time (see vlcs/__init__.py)
if TYPE_CHECKING:
    from typing import Any, NoReturn

# libpython, through a handle of vlcs's own: prototypes set on
# ctypes.pythonapi's functions are everyone's, and a user's restype there
# would change what vlcs reads.
pythonapi = ctypes.PyDLL(None, handle=ctypes.pythonapi._handle)

_c = ctypes.c_void_p
_s = ctypes.c_char_p
_i = ctypes.c_int


class _Opts(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint), ("strict", ctypes.c_int), ("node", ctypes.c_int)]


_List = ctypes.POINTER(ctypes.c_char_p)
_ULONG_P = ctypes.POINTER(ctypes.c_ulong)


class _Family(ctypes.Structure):
    # struct vlcs_family of vlcs.h
    _fields_ = [
        ("size", ctypes.c_uint),
        ("name", ctypes.c_char_p),
        ("prefixes", _List),
        ("get_threads", _List),
        ("set_threads", _List),
        ("count_type", ctypes.c_int),
        ("resize_when_elastic", ctypes.c_int),
        ("stop_pool", _List),
    ]


class Progress(ctypes.Structure):
    # vlcs_progress_t of vlcs.h
    _fields_ = [
        ("units", ctypes.c_ulonglong),
        ("rate", ctypes.c_double),
        ("rate_cpus", ctypes.c_int),
        ("most_cpus", ctypes.c_int),
    ]


# vlcs_count_type_t
COUNT_TYPES = ("int", "int64")


# name -> (return type, argument types), as in vlcs.h
_SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "vlcs_version": (_s, []),
    "vlcs_error": (_s, []),
    "vlcs_errcode": (_i, []),
    "vlcs_errlimit": (_i, []),
    "vlcs_room": (_i, [ctypes.c_int, _ULONG_P, _ULONG_P]),
    "vlcs_invalidate_caches": (_i, []),
    "vlcs_family_register": (_i, [ctypes.POINTER(_Family)]),
    "vlcs_family_at": (ctypes.POINTER(_Family), [ctypes.c_ulong]),
    "vlcs_init_opts": (_i, [ctypes.POINTER(_Opts)]),
    "vlcs_strict_active": (_i, []),
    "vlcs_node_ledger": (_s, []),
    "vlcs_service_add": (_i, [_s]),
    "vlcs_service_add_program": (_i, [_s, _s]),
    "vlcs_service_auto": (_i, [_s, _i]),
    "vlcs_service_auto_get": (_i, [ctypes.c_ulong, _s, ctypes.c_ulong, _s, ctypes.c_ulong]),
    "vlcs_ctx_set_gpus": (_i, [_c, _s]),
    "vlcs_ctx_get_gpus": (_i, [_c, _s, ctypes.c_ulong]),
    "vlcs_ctx_create": (_c, [_s]),
    "vlcs_ctx_name": (_s, [_c]),
    "vlcs_ctx_set_cpus": (_i, [_c, _s]),
    "vlcs_ctx_get_cpus": (_i, [_c, _s, ctypes.c_ulong]),
    "vlcs_ctx_set_elastic": (_i, [_c, _s, ctypes.c_uint]),
    "vlcs_ctx_get_cpuset": (_i, [_c, _i, _s, ctypes.c_ulong]),
    "vlcs_ctx_progress": (_i, [_c, ctypes.c_ulonglong]),
    "vlcs_ctx_get_progress": (_i, [_c, ctypes.POINTER(Progress)]),
    "vlcs_ctx_setenv": (_i, [_c, _s, _s]),
    "vlcs_ctx_unsetenv": (_i, [_c, _s]),
    "vlcs_ctx_getenv": (_s, [_c, _s]),
    "vlcs_ctx_load": (_c, [_c, _s]),
    "vlcs_ctx_thread_count": (_i, [_c]),
    "vlcs_ctx_keep_loaded": (_i, [_c, _s]),
    "vlcs_ctx_destroy": (_i, [_c]),
    "vlcs_enter": (_i, [_c]),
    "vlcs_ctx_call": (_i, [_c, _c, _c, ctypes.POINTER(_c)]),
    "vlcs_ctx_fault": (_s, [_c]),
    "vlcs_leave": (_i, []),
    "vlcs_current": (_c, []),
    "vlcs_thread_adopt": (_i, [_c]),
    "vlcs_place_cpus": (_i, [_s, ctypes.c_char_p, ctypes.c_ulong]),
    "vlcs_trace_start": (_i, [_s]),
    "vlcs_trace_stop": (_i, []),
    "vlcs_trace_mark": (_i, [_s, ctypes.c_char, _s]),
    "vlcs_topo_objects": (_i, [_s, ctypes.c_char_p, ctypes.c_ulong]),
    "vlcs_hwloc_library": (_i, [ctypes.c_char_p, ctypes.c_ulong]),
    "vlcs_ctx_exec": (_i, [_c, ctypes.POINTER(ctypes.c_char_p)]),
    "vlcs_ctx_set_stdio": (_i, [_c, _i, _i, _i]),
    "vlcs_ctx_set_global_library": (_i, [_c, _s]),
    "vlcs_ctx_set_mode": (_i, [_c, _i]),
    "vlcs_ctx_mode": (_i, [_c]),
    # internal: a copy-mode context's scope, loaded libraries and copies
    "vlcs_ctx_scope": (_c, [_c]),
    "vlcs_ctx_loaded": (_c, [_c, _s]),
    "vlcs_ctx_object": (_s, [_c, ctypes.c_ulong]),
    "vlcs_ctx_env_entry": (_s, [_c, ctypes.c_ulong]),
    "vlcs_ctx_drop_library_opens": (_i, [_c]),
    "vlcs_arenas_new": (_c, []),
    "vlcs_arenas_release": (ctypes.c_size_t, [_c]),
    "vlcs_ctx_sym": (_c, [_c, _s]),
    # internal (VLCS_INTERNAL_API): which extension module is on the native stack
    "vlcs_stack_find": (_c, [ctypes.POINTER(_c), ctypes.c_ulong]),
    # internal: the context's forged /proc and /sys files, for Python's open()
    "vlcs_view_open": (ctypes.c_int, [_c, ctypes.c_char_p, ctypes.c_int]),
    "vlcs_view_file": (_s, [ctypes.c_ulong, ctypes.POINTER(_s)]),
    # internal: context extension modules' PyDict_* calls on sys.modules go
    # through the module table's methods
    "vlcs_python_module_table": (None, [_c]),
    "vlcs_python_c_caller": (_c, []),
    "vlcs_python_state_dict": (_i, [_c, _c]),
}

_lock = threading.Lock()
_lib: ctypes.CDLL | None = None
_binding: tuple[Any, Any, Any] | None = None


def lib() -> ctypes.CDLL:
    """libvlcs.so, loaded once into the base namespace, every function typed."""
    global _lib
    if _lib is None:
        with _lock:
            if _lib is None:
                handle = ctypes.CDLL(library_file())
                for name, (res, args) in _SIGNATURES.items():
                    f = getattr(handle, name)
                    f.restype, f.argtypes = res, args
                _lib = handle
                _errors._read_limit = handle.vlcs_errlimit
    return _lib


# what vlcs._own_runtime gives a context's own Python before anything imports vlcs
_host_given = sys.modules.get("_vlcs_host")
IN_OWN_PYTHON = _host_given is not None
_host: ctypes.CDLL | None = None


def host_lib() -> ctypes.CDLL | None:
    """In a context's own Python (``python="own"``), the libvlcs of the
    Python that made the context, whose contexts this Python's tasks run
    in; None elsewhere.  lib() is the namespace's own copy there, and
    contexts made in that Python are that copy's (their extension modules
    bind the C API of the Python that made them): only what concerns the
    context a task runs in goes to the host's."""
    global _host
    if _host is None and _host_given is not None:
        path, address = _host_given.libvlcs
        host = ctypes.CDLL(path, handle=address)
        f = host.vlcs_ctx_progress
        f.restype, f.argtypes = _SIGNATURES["vlcs_ctx_progress"]
        _host = host
    return _host


def c_string(value: Any, what: str, *, path: bool = False) -> bytes:
    """value as the NUL-terminated string a C function of libvlcs takes:
    str (or, for a path, bytes and os.PathLike too), without NUL bytes,
    which would cut it short in C (TypeError / ValueError naming `what`)."""
    if path:
        try:
            raw = os.fsencode(value)
        except TypeError:
            raise TypeError(
                f"{what} must be a str, bytes or os.PathLike; got {type(value).__name__}"
            ) from None
    elif isinstance(value, str):
        raw = value.encode()
    else:
        raise TypeError(f"{what} must be a str; got {type(value).__name__} {value!r}")
    if b"\0" in raw:
        raise ValueError(f"{what} contains a NUL byte: {value!r}")
    return raw


class _Binding(ctypes.Structure):
    # struct vlcs_binding of vlcs.h
    _fields_ = [("incref", _c), ("raise_", _c), ("classes", ctypes.py_object * 9)]


def enter_binding() -> tuple[Any, Any, Any]:
    """(vlcs_enter_binding, vlcs_leave_binding, its struct vlcs_binding),
    called the Python-API way (the GIL held, the exception the C side sets
    raised by ctypes): ``with ctx:`` runs no Python code of its own between
    entering and the with-block, so a KeyboardInterrupt cannot leave a
    thread inside a context it never got to leave."""
    global _binding
    if _binding is None:
        from vlcs._errors import _BY_CODE

        py = ctypes.PyDLL(None, handle=lib()._handle)
        enter, leave = py.vlcs_enter_binding, py.vlcs_leave_binding
        enter.restype = ctypes.py_object
        enter.argtypes = [_c, ctypes.py_object, ctypes.POINTER(_Binding)]
        leave.restype = None
        leave.argtypes = [ctypes.py_object] * 3
        b = _Binding(
            ctypes.cast(ctypes.pythonapi.Py_IncRef, _c).value,
            ctypes.cast(ctypes.pythonapi.PyErr_SetString, _c).value,
            (ctypes.py_object * 9)(*(_BY_CODE.get(code, VlcsError) for code in range(9))),
        )
        _binding = (enter, leave, ctypes.pointer(b))
    return _binding


def _error() -> str:
    return (lib().vlcs_error() or b"").decode(errors="replace")


# glibc's namespaces are few: from Python the way out is closing or reusing contexts.
_NAMESPACES_HINT = (
    "; from Python, close() contexts no longer needed, or reuse contexts with vlcs.ContextPool "
    "(a context that imported extension modules keeps its namespace when closed)"
)


def _names(lst: Any) -> tuple[str, ...]:
    out: list[str] = []
    while lst and lst[len(out)] is not None:
        out.append(lst[len(out)].decode())
    return tuple(out)


def _c_list(names: tuple[str, ...]) -> Any:
    raw = [c_string(n, "a symbol or file name") for n in names]
    return (ctypes.c_char_p * (len(raw) + 1))(*raw, None)


def families() -> dict[str, dict[str, Any]]:
    """libvlcs's table of library families, by name: what its C side knows
    of each (file prefixes, thread-count symbols and their type, whether
    elastic contexts resize it, its pool stoppers)."""
    out: dict[str, dict[str, Any]] = {}
    i = 0
    while f := lib().vlcs_family_at(i):
        d = f.contents
        out[d.name.decode()] = {
            "filename_prefixes": _names(d.prefixes),
            "get_threads": _names(d.get_threads),
            "set_threads": _names(d.set_threads),
            "count_type": COUNT_TYPES[d.count_type],
            "resize_when_elastic": bool(d.resize_when_elastic),
            "stop_pool": _names(d.stop_pool),
        }
        i += 1
    return out


def register_family(
    name: str,
    filename_prefixes: tuple[str, ...],
    get_threads: tuple[str, ...],
    set_threads: tuple[str, ...],
    count_type: str,
    resize_when_elastic: bool,
    stop_pool: tuple[str, ...],
) -> None:
    """Register a library family with libvlcs (vlcs_family_register)."""
    if count_type not in COUNT_TYPES:
        raise ValueError(f"count_type must be one of {list(COUNT_TYPES)}; got {count_type!r}")
    lists = [_c_list(tuple(x)) for x in (filename_prefixes, get_threads, set_threads, stop_pool)]
    f = _Family(
        ctypes.sizeof(_Family),
        c_string(name, "the family's name"),
        ctypes.cast(lists[0], _List),
        ctypes.cast(lists[1], _List),
        ctypes.cast(lists[2], _List),
        COUNT_TYPES.index(count_type),
        int(bool(resize_when_elastic)),
        ctypes.cast(lists[3], _List),
    )
    check(lib().vlcs_family_register(ctypes.byref(f)))


@functools.cache
def forged_files() -> tuple[tuple[str, str], ...]:
    """libvlcs's table of forged files: (prefix, an example path) per row
    (fixed for the process: read once)."""
    rows: list[tuple[str, str]] = []
    example = _s()
    while (prefix := lib().vlcs_view_file(len(rows), ctypes.byref(example))) is not None:
        rows.append((prefix.decode(), (example.value or b"").decode()))
    return tuple(rows)


def last_error() -> VlcsError:
    """The calling thread's last libvlcs failure as an exception of its code's class."""
    text, limit = _error(), lib().vlcs_errlimit()
    if limit in (Limit.NAMESPACES, Limit.STATIC_TLS):
        text += _NAMESPACES_HINT
    return error_for(lib().vlcs_errcode(), text, limit)


def fault_error(ctx: int) -> VlcsError:
    """The calling thread's last failure, a call into context ctx (a
    handle): a ContextFaultError carries the context's report."""
    e = last_error()
    if isinstance(e, ContextFaultError):
        report = lib().vlcs_ctx_fault(ctx)
        e.report = report.decode(errors="replace") if report else None
    return e


def fail() -> NoReturn:
    """Raise the calling thread's last libvlcs failure."""
    raise last_error()


def check(rc: int) -> int:
    """rc, or raise the failure when a call returned -1."""
    if rc < 0:
        fail()
    return rc


def init(strict: bool = False, node: bool = False) -> None:
    """Initialise vlcs; ``strict=True`` also turns on strict mode,
    ``node=True`` node-wide lending.

    Strict mode answers raw syscalls made by code in contexts (see vlcs.h);
    it cannot be turned off.  Raises UnsupportedPlatformError (a VlcsError)
    with the reason when it is not available here (no seccomp, a container
    policy); contexts keep working.

    Node-wide mode makes the elastic contexts of every process on the
    machine that turned it on (``vlcs.init(node=True)`` or ``VLCS_NODE=1``)
    lend and reclaim CPUs through one ledger in shared memory that only the
    user can reach (``$XDG_RUNTIME_DIR/vlcs/node-ledger``, else
    ``/dev/shm/vlcs-<uid>/node-ledger``, or the file ``VLCS_NODE_LEDGER``
    names): an idle job's CPUs go to a busy one, and come back when it has
    work or dies.  Raises VlcsError when the ledger cannot be opened, or is
    not the user's alone (another user's file, a symbolic link: the
    sentence names it); elastic contexts keep lending within the process.

    >>> import vlcs
    >>> vlcs.init()
    >>> vlcs.strict_active()
    False
    >>> vlcs.node_ledger() is None
    True
    """
    opts = _Opts(ctypes.sizeof(_Opts), 1 if strict else 0, 1 if node else 0)
    check(lib().vlcs_init_opts(ctypes.byref(opts)))


def strict_active() -> bool:
    """Whether strict mode is on in this process."""
    return bool(lib().vlcs_strict_active())


def node_ledger() -> str | None:
    """The node ledger's path when node-wide mode is on, else None."""
    p = lib().vlcs_node_ledger()
    return os.fsdecode(p) if p is not None else None


def service(library: str) -> None:
    """Make ``library`` a service: one copy in the base, shared by every context.

    Dependants later loaded into contexts bind to that copy (see
    vlcs_service_add in vlcs.h).  Call it before contexts load them.
    Raises LibraryNotFoundError when it cannot be loaded.

    >>> import vlcs
    >>> vlcs.service("libm.so.6")
    """
    check(lib().vlcs_service_add(c_string(library, "library", path=True)))


# vlcs_service_auto_get's states (VLCS_AUTO_* in vlcs.h)
_AUTO_STATES = ("pending", "service", "absent", "failed")


def auto_services() -> list[dict[str, str]]:
    """The libraries vlcs makes services on its own, because a second copy
    in one process breaks them (GPU drivers: NVIDIA's libcuda.so.1 and NVML,
    ROCm's HSA runtime), each with its ``state``: "pending" (no context has
    loaded anything since it was listed), "service" (one copy, in the base,
    shared by every context), "absent" (not on this machine) or "failed"
    (on the machine, but could not be shared: ``why`` says what happened),
    and ``why`` it is listed.  docs/gpus.md has the table and its reasons.

    >>> import vlcs
    >>> names = [s["name"] for s in vlcs.auto_services()]
    >>> names[0]
    'libcuda.so.1'
    """
    out = []
    name, why = ctypes.create_string_buffer(256), ctypes.create_string_buffer(512)
    while (state := lib().vlcs_service_auto_get(len(out), name, 256, why, 512)) >= 0:
        out.append(
            {"name": name.value.decode(), "state": _AUTO_STATES[state], "why": why.value.decode()}
        )
    return out


# vlcs_room's resources, by the names room() gives them
_ROOM = {
    "namespaces": Limit.NAMESPACES,
    "memory_maps": Limit.MAPS,
    "descriptors": Limit.DESCRIPTORS,
    "threads": Limit.THREADS,
    "keys": Limit.KEYS,
}
_UNBOUNDED = ctypes.c_ulong(-1).value


def room() -> dict[str, dict[str, int | None]]:
    """How much of each per-process resource that contexts use up is in
    use (``used``) and how much the process may use (``limit``, None when
    unbounded): ``namespaces`` (linker namespaces vlcs made and has not
    given back, of glibc's 15), ``memory_maps`` (of the kernel's vm.max_map_count),
    ``descriptors`` (of RLIMIT_NOFILE), ``threads`` (this process's, of the
    least of threads-max, RLIMIT_NPROC and the cgroup's pids.max) and
    ``keys`` (thread-specific data keys of contexts' libraries).  A load
    that would leave the process less than a reserve of memory maps or, in
    copy mode, of descriptors raises VlcsLimitError before anything is
    mapped.

    >>> import vlcs
    >>> maps = vlcs.room()["memory_maps"]
    >>> maps["used"] <= maps["limit"]
    True
    """
    out: dict[str, dict[str, int | None]] = {}
    used, limit = ctypes.c_ulong(), ctypes.c_ulong()
    for name, resource in _ROOM.items():
        check(lib().vlcs_room(int(resource), ctypes.byref(used), ctypes.byref(limit)))
        out[name] = {
            "used": used.value,
            "limit": None if limit.value == _UNBOUNDED else limit.value,
        }
    return out


def auto_service(library: str, enabled: bool = True) -> None:
    """Add ``library`` (a soname or a path) to the libraries vlcs makes
    services on its own, or remove it (``enabled=False``), before the first
    load into any context; one added later becomes a service at the next
    load.  The environment variable ``VLCS_AUTO_SERVICES`` does the same
    from outside ("-libnvidia-ml.so.1,+libfoo.so.2"; "" for none).  Raises
    InvalidArgumentError when removing one that is a service already
    (services stay for the life of the process).

    >>> import vlcs
    >>> vlcs.auto_service("libvlcs-example.so.1")
    >>> vlcs.auto_service("libvlcs-example.so.1", enabled=False)
    """
    check(lib().vlcs_service_auto(c_string(library, "library", path=True), 1 if enabled else 0))
