"""Which packages and submodules ``vlcs check`` takes: import names and
what pip installs, and a package's submodules found without importing them.
Standard library only (tests load it by file)."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from typing import Any

# Import name -> what to pip install, where the two differ.
PIP_NAMES: dict[str, str] = {
    "sklearn": "scikit-learn",
    "cv2": "opencv-python-headless",
    "google": "protobuf",
    "google.protobuf": "protobuf",
    "yaml": "pyyaml",
    "PIL": "pillow",
    "skimage": "scikit-image",
    "bs4": "beautifulsoup4",
    "dateutil": "python-dateutil",
    "attr": "attrs",
    "jwt": "pyjwt",
    "OpenSSL": "pyopenssl",
    "Crypto": "pycryptodome",
    "serial": "pyserial",
    "usb": "pyusb",
}


def pip_name(pkg: str) -> str:
    """What to pip install for an import name.

    >>> pip_name("sklearn"), pip_name("numpy")
    ('scikit-learn', 'numpy')
    """
    return PIP_NAMES.get(pkg) or PIP_NAMES.get(pkg.partition(".")[0]) or pkg.partition(".")[0]


def import_names(dist: str) -> list[str]:
    """The top-level packages an installed distribution provides, for a
    name given to ``vlcs check`` that is what pip installs rather than
    what Python imports ([] when no distribution has that name; its
    private modules, such as ``_cffi_backend``, left out).

    >>> import_names("no-such-distribution")
    []
    """
    import importlib.metadata
    import re

    def norm(n: str) -> str:
        return re.sub(r"[-_.]+", "-", n).lower()

    want = norm(dist)
    found = [
        top
        for top, dists in importlib.metadata.packages_distributions().items()
        if any(norm(d) == want for d in dists) and not top.startswith("_")
    ]
    return sorted(found)


def installed(pkg: str) -> bool:
    """Whether pkg can be imported in the base (found, not imported)."""
    try:
        return importlib.util.find_spec(pkg) is not None
    except (ImportError, ValueError):
        return False
    except Exception:
        return True  # its parent package is there but fails: the child will say how


MAX_SUBMODULES = 200
"""Submodules imported per package at most."""

_SKIP_PARTS = ("conftest", "__main__", "setup", "_pyinstaller")


def _skipped(name: str) -> bool:
    """Whether a submodule is left out of the walk (tests, setup scripts, ...)."""
    return any("test" in p or p in _SKIP_PARTS for p in name.split("."))


def _discover(top: Any, cap: int = MAX_SUBMODULES) -> list[str]:
    """Names of top's submodules, breadth first, found without importing any
    (pkgutil.walk_packages would import every subpackage, tests included).

    >>> import json
    >>> _discover(json)
    ['json.decoder', 'json.encoder', 'json.scanner', 'json.tool']
    """
    out: list[str] = []
    queue: list[tuple[list[str], str]] = []
    if getattr(top, "__path__", None) is not None:
        queue.append((list(top.__path__), top.__name__ + "."))
    while queue and len(out) < cap:
        path, prefix = queue.pop(0)
        for info in sorted(pkgutil.iter_modules(path, prefix), key=lambda i: i.name):
            if _skipped(info.name):
                continue
            out.append(info.name)
            if len(out) >= cap:
                break
            if info.ispkg:
                try:
                    spec = info.module_finder.find_spec(info.name)  # type: ignore[call-arg]
                except Exception:
                    spec = None
                locs = spec.submodule_search_locations if spec is not None else None
                if locs:
                    queue.append((list(locs), info.name + "."))
    return out
