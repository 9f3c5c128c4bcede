"""The ``vlcs`` command: parses its arguments and dispatches to the package
(each subcommand is a module of vlcs._cli).

vlcs run [--contexts N | --static-tls BYTES] -- PROGRAM [ARGS...]
vlcs exec -n N [--cpus LIST] [--places core|l3...] [--env NAME=VALUE] [--output tag|plain]
          [--stdin first|all] [--stdout FILE] [--stderr FILE] -- PROGRAM [ARGS...]
vlcs topo [--topology FILE.xml | --synthetic DESC] [--workers N] [--places core|l3...] [--json]
vlcs trace show TRACE.json [-o OUT.png]
vlcs doctor [--json]
vlcs info [--cflags] [--libs] [--json]
vlcs shim LIBRARY -o DIR [--json]
vlcs check PKG [PKG...] [--json] [--timeout S] [--python own]
vlcs tune TASKS.toml [--cpus LIST] [--method smart|grid] [--step N | --places core|l3...]
          [--overlap] [--repeats N] [--timeout S] [--out DIR] [--dask ADDRESS] [--json]
vlcs bench all [--quick] [--cases N,M] [--out DIR] [--json]   (package vlcs-bench)
vlcs bench core|strict|shim|python [--json]                   (package vlcs-bench)
vlcs demo [python|gemm]                                       (package vlcs-bench)
"""

from __future__ import annotations

import os
import sys

from vlcs import _cli
from vlcs._version import __version__

TYPE_CHECKING = False  # typing is not imported at run time (see vlcs/__init__.py)
if TYPE_CHECKING:
    import argparse


def _columns() -> int:
    """The terminal's width as shutil.get_terminal_size finds it, without
    importing shutil (with bz2 and lzma: a tenth of vlcs exec's start-up)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def _parser_class() -> type[argparse.ArgumentParser]:
    """argparse's parser, its help as wide as argparse makes it
    (subcommands' parsers are of this class too); argparse is imported
    here, after a `vlcs exec` that starts again has gone (_cli.again)."""
    import argparse

    class _Parser(argparse.ArgumentParser):
        def _get_formatter(self) -> argparse.HelpFormatter:
            return self.formatter_class(prog=self.prog, width=_columns() - 2)

    return _Parser


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of the command line argv (default: this process's): with
    the subcommand it names alone, or every one (``vlcs --help``, a name
    that is none)."""
    args = sys.argv[1:] if argv is None else argv
    named = next((a for a in args if not a.startswith("-")), None)
    p = _parser_class()(prog="vlcs", description="Virtual Library Contexts for Linux.")
    p.add_argument("--version", action="version", version=f"vlcs {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    for command in _cli.modules(named):
        command.add(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    if argv is None and sys.argv[1:2] == ["exec"]:
        from vlcs._cli.again import instances_asked, start_again_if_many

        n = instances_asked(sys.argv[2:])
        if n is not None:
            start_again_if_many(n, sys.argv[1:])
    args = build_parser(argv).parse_args(argv)
    args.raw_argv = sys.argv[1:] if argv is None else None  # to start again as given
    try:
        return int(args.func(args))
    except FileNotFoundError as e:
        print(f"vlcs: {e}", file=sys.stderr)
        return 1
