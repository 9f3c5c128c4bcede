"""``vlcs exec`` past a few instances: the command line once more under the
``vlcs-run`` launcher, which raises glibc's namespaces and static TLS to
what that many contexts need before Python starts (glibc reads them once,
at start).  Checked before the ``vlcs`` command imports its parser: the
first Python then costs its own start alone."""

from __future__ import annotations

import os
import sys

from vlcs._paths import program_file

#: instances that fit in the glibc a Python starts with
FEW = 4

# The command line once more, under the launcher; not `-m vlcs`, which
# imports runpy.  Where vlcs is installed with its native parts beside it,
# without site (`-S`: an environment's .pth files can cost a Python half
# its start), vlcs found where it is: its instances are programs, never
# Python code, and it needs no other package.
_AGAIN = "import sys; from vlcs.cli import main; sys.exit(main())"
_AGAIN_FROM = "import sys; sys.path.append({!r}); " + _AGAIN


def instances_asked(args: list[str]) -> int | None:
    """N of ``-n N``, ``-nN``, ``--instances N`` or ``--instances=N`` among
    an exec command line's options (what follows ``exec``, up to ``--`` or
    the program); None when it says none plainly (argparse then decides)."""
    i = 0
    while i < len(args) and args[i] != "--":
        a = args[i]
        value = None
        if a in ("-n", "--instances") and i + 1 < len(args):
            value = args[i + 1]
        elif a.startswith("--instances="):
            value = a.partition("=")[2]
        elif a.startswith("-n") and not a.startswith("--"):
            value = a[2:]
        if value is not None:
            return int(value) if value.isdigit() else None
        i += 1
    return None


def start_again_if_many(instances: int, raw_argv: list[str]) -> None:
    """Past FEW instances, and unless the launcher has set glibc up
    already, this process becomes ``vlcs-run --contexts N -- python ...``
    running raw_argv (the command line after ``vlcs``); else it returns."""
    if instances <= FEW or "glibc.rtld.nns" in os.environ.get("GLIBC_TUNABLES", ""):
        return
    launcher = program_file("vlcs-run")
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    python = [sys.executable, "-c", _AGAIN]
    if os.path.isdir(os.path.join(package, "_native")):  # not an editable install's
        python = [sys.executable, "-S", "-c", _AGAIN_FROM.format(os.path.dirname(package))]
    sized = ["--contexts", str(instances)]
    os.execv(launcher, [launcher, *sized, "--", *python, *raw_argv])
