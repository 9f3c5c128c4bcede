"""The package's one table of libvlcs's C signatures (vlcs._lib) against
include/vlcs.h: a function typed wrongly in ctypes passes its arguments
wrongly without any error, so each entry is checked against the header's
prototype, and the structures against the header's."""

from __future__ import annotations

import ctypes
import re
from pathlib import Path

from vlcs import _lib

HEADER = Path(__file__).resolve().parents[2] / "include" / "vlcs.h"

_P = ctypes.c_void_p
# a C type of vlcs.h -> what ctypes must be given for it
C_TO_CTYPES = {
    "void": None,
    "int": ctypes.c_int,
    "double": ctypes.c_double,
    "char": ctypes.c_char,
    "unsigned": ctypes.c_uint,
    "unsigned long": ctypes.c_ulong,
    "unsigned long *": ctypes.POINTER(ctypes.c_ulong),
    "unsigned long long": ctypes.c_ulonglong,
    "size_t": ctypes.c_size_t,
    "char *": ctypes.c_char_p,
    "const char *": ctypes.c_char_p,
    "const char **": ctypes.POINTER(ctypes.c_char_p),
    "const char *const *": ctypes.POINTER(ctypes.c_char_p),
    "char *const *": ctypes.POINTER(ctypes.c_char_p),
    "void *": _P,
    "void **": ctypes.POINTER(_P),
    "vlcs_ctx *": _P,
    "const vlcs_ctx *": _P,
    "vlcs_arenas *": _P,
    "const struct vlcs_binding *": _P,
    "vlcs_call_fn": _P,
    "const vlcs_opts *": ctypes.POINTER(_lib._Opts),
    "const vlcs_family *": ctypes.POINTER(_lib._Family),
    "vlcs_progress_t *": ctypes.POINTER(_lib.Progress),
}


def _header() -> str:
    return re.sub(r"/\*.*?\*/", "", HEADER.read_text(), flags=re.S)


def _norm(c_type: str) -> str:
    """One spelling per type: "const char *const *" -> "const char * const *"."""
    return " ".join(c_type.replace("*", " * ").split())


KNOWN = {_norm(c): t for c, t in C_TO_CTYPES.items()}


def _split_param(param: str) -> str:
    """The type of one parameter declaration ("const char *name" -> "const char *")."""
    param = " ".join(param.split())
    if param.endswith("[]"):  # char *const argv[]
        param = param[:-2] + " *"
        param = re.sub(r"\s*\b\w+\s*\*$", " *", param)
        return _norm(param)
    m = re.match(r"(.*?[\s*])(\w+)$", param)
    return _norm(m.group(1) if m else param)


def prototypes() -> dict[str, tuple[str, list[str]]]:
    """Every VLCS_API function of vlcs.h: name -> (return type, parameter types)."""
    out = {}
    for head, params in re.findall(r"^VLCS_API\s+([^;(]*?)\(([^)]*)\)\s*;", _header(), re.M):
        m = re.match(r"(.*?[\s*])(\w+)$", " ".join(head.split()))
        assert m, head
        ret, name = _norm(m.group(1)), m.group(2)
        args = [] if params.strip() == "void" else [_split_param(p) for p in params.split(",")]
        out[name] = (ret, args)
    return out


def _same(c_type: str, given: object) -> bool:
    want = KNOWN[c_type]
    if want is None or given is None:
        return want is given
    if hasattr(want, "_type_") and hasattr(given, "_type_") and isinstance(want._type_, type):
        # pointers: the same pointed-to type
        return issubclass(given, ctypes._Pointer) == issubclass(want, ctypes._Pointer) and (
            given._type_ is want._type_ if issubclass(want, ctypes._Pointer) else given is want
        )
    return given is want


def test_every_signature_the_package_uses_is_the_headers():
    protos = prototypes()
    assert len(protos) > 50, protos
    unknown = {t for ret, args in protos.values() for t in [ret, *args]} - set(KNOWN)
    assert not unknown, f"vlcs.h uses C types this test does not map: {unknown}"
    wrong = []
    for name, (res, args) in _lib._SIGNATURES.items():
        assert name in protos, f"{name} is in vlcs._lib but not declared in vlcs.h"
        c_ret, c_args = protos[name]
        if not _same(c_ret, res):
            wrong.append(f"{name} returns {c_ret}, typed {res}")
        if len(c_args) != len(args):
            wrong.append(f"{name} takes {len(c_args)} arguments, typed {len(args)}")
            continue
        for i, (c, given) in enumerate(zip(c_args, args, strict=True)):
            if not _same(c, given):
                wrong.append(f"{name} argument {i + 1} is {c}, typed {given}")
    assert not wrong, "\n".join(wrong)


def test_the_package_types_every_function_it_calls():
    """Every lib().vlcs_* the package calls has an entry (ctypes would
    otherwise pass ints and read an int back)."""
    root = Path(_lib.__file__).parent
    called = set()
    for path in root.rglob("*.py"):
        called |= set(re.findall(r"lib\(\)\.(vlcs_\w+)", path.read_text()))
    assert called and not called - set(_lib._SIGNATURES), called - set(_lib._SIGNATURES)


def _c_fields(struct: str) -> list[tuple[str, str]]:
    body = re.search(r"struct " + struct + r" \{(.*?)\}", _header(), re.S)
    assert body, struct
    fields = []
    for decl in body.group(1).split(";"):
        if decl.strip():
            fields.append((re.search(r"(\w+)\s*$", decl).group(1), _split_param(decl)))
    return fields


def test_the_structures_are_the_headers():
    for struct, cls in (
        ("vlcs_opts", _lib._Opts),
        ("vlcs_family", _lib._Family),
        ("vlcs_progress", _lib.Progress),
    ):
        c_fields = _c_fields(struct)
        assert [n for n, _ in cls._fields_] == [n for n, _ in c_fields], struct
        for (name, given), (_, c_type) in zip(cls._fields_, c_fields, strict=True):
            assert _same(c_type, given), f"{struct}.{name} is {c_type}, typed {given}"
