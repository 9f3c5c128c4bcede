"""The first code a context's own Python runs, as its __main__: after the
text of vlcs._own_views (_Owner, _addresses, _views), with _vlcs_given set
by the host; vlcs._own compiles the two texts once and sends the code.
Never imported.

It defines the function each task calls.  Memory crosses both ways as
views: the request lends the caller's buffers (token
`lent`), the reply lends the result's (token `token`); each side reports,
with its next message, the tokens whose views it no longer has, and the
other side lets go of what it kept alive for them.

It imports only what every task needs, about 1.5 ms of the 4-5 a bare
`import pickle, os` takes: _pickle, with a stand-in for functools while it
starts (it takes functools.partial, which is _functools.partial: not
collections, reprlib and functools itself), and posix, not os (os.environ
is made from posix.environ when something imports os, so the environment
is set there).  ctypes and weakref come with the first task that lends or
returns buffers, and ctypes.pythonapi is mended whenever ctypes is
imported (dlopen(NULL), its default, is the process's program: the
host's C API).
"""
# _Owner, _addresses, _views and _vlcs_given are given (above):
# ruff: noqa: F821

if __name__ != "__main__":
    raise ImportError("vlcs._own_runtime runs only as a context's own Python's __main__")

import _functools
import itertools
import posix
import sys

if "functools" not in sys.modules:
    _vlcs_stub = type(sys)("functools")
    _vlcs_stub.partial = _functools.partial
    sys.modules["functools"] = _vlcs_stub
    try:
        import _pickle as pickle
    finally:
        del sys.modules["functools"], _vlcs_stub
else:
    import _pickle as pickle
_vlcs_executable, _vlcs_libpython, _vlcs_environ, _vlcs_restore, _vlcs_libvlcs = _vlcs_given
del _vlcs_given
sys.executable = _vlcs_executable
# the host's libvlcs (path, handle), for vlcs._lib.host_lib
_vlcs_host = type(sys)("_vlcs_host")
_vlcs_host.libvlcs = _vlcs_libvlcs
sys.modules["_vlcs_host"] = _vlcs_host
del _vlcs_host, _vlcs_libvlcs


class _VlcsPythonapi:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "ctypes":
            return None
        for finder in [f for f in sys.meta_path if f is not _VlcsPythonapi]:
            spec = getattr(finder, "find_spec", lambda *a: None)(name, path, target)
            if spec is not None:
                break
        else:
            return None
        sys.meta_path.remove(_VlcsPythonapi)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            module.pythonapi = module.PyDLL(_vlcs_libpython)

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _VlcsPythonapi)


def _vlcs_bytes(text):
    return text.encode(sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())


if _vlcs_environ is not None:  # copy mode: libc's environ is the process's
    posix.environ.clear()
    for _name, _value in _vlcs_environ.items():
        posix.environ[_vlcs_bytes(_name)] = _vlcs_bytes(_value)
for _name, _value in _vlcs_restore.items():
    if _value is None:
        posix.environ.pop(_vlcs_bytes(_name), None)
        posix.unsetenv(_name)
    else:
        posix.environ[_vlcs_bytes(_name)] = _vlcs_bytes(_value)
        posix.putenv(_name, _value)
del _name, _value, _vlcs_bytes
_vlcs_held = {}  # token -> what keeps a result's buffers alive for the caller's views
_vlcs_released = []  # the caller's tokens whose buffers no view here uses any more
_vlcs_tokens = itertools.count(1)

_vlcs_request = None  # set by the host before each call of _vlcs_call


def _vlcs_call():
    global _vlcs_request
    request, _vlcs_request = _vlcs_request, None
    return _vlcs_task(request)


def _vlcs_task(request):
    lent, views, payload, dropped = pickle.loads(request)
    for token in dropped:
        _vlcs_held.pop(token, None)
    owner = _Owner()
    if lent:
        import weakref

        weakref.finalize(owner, _vlcs_released.append, lent)
    buffers = _views(views, owner)
    del owner
    try:
        fn, args, kwargs = pickle.loads(payload, buffers=buffers)
        del buffers
        outcome = ("ok", fn(*args, **kwargs))
    except BaseException as e:
        import traceback

        outcome = ("error", e, traceback.format_exc())
    finally:
        fn = args = kwargs = buffers = None  # noqa: F841 (their references go now)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
    out = []
    try:
        data = pickle.dumps(outcome, protocol=5, buffer_callback=out.append)
    except BaseException as e:
        text = outcome[2] if outcome[0] == "error" else ""
        out = []
        data = pickle.dumps(("error", None, text + f"the outcome could not be pickled: {e!r}"))
    outcome = None
    keep = []
    triples = _addresses(out, keep)
    del out
    token = next(_vlcs_tokens) if keep else 0
    if keep:
        _vlcs_held[token] = keep
    released = _vlcs_released[:]
    del _vlcs_released[: len(released)]
    return pickle.dumps((token, triples, data, released), protocol=5)
