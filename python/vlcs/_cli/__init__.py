"""The ``vlcs`` command's subcommands, one module each: ``add(sub)`` makes a
subcommand's parser, whose ``func`` runs it (vlcs.cli builds and dispatches)."""

from __future__ import annotations

import importlib
from types import ModuleType

# Each subcommand and the module that makes its parser, in the order ``vlcs
# --help`` lists them.  A command line that names one imports and builds
# that one alone: the others' parsers and imports cost vlcs exec's start-up
# a tenth.
COMMANDS = {
    "run": "run",
    "exec": "exec_",
    "topo": "topo",
    "trace": "trace",
    "doctor": "doctor",
    "info": "info",
    "bench": "bench",
    "demo": "bench",
    "shim": "shim",
    "check": "check",
    "tune": "tune",
}


def modules(named: str | None = None) -> list[ModuleType]:
    """The subcommands' modules, in ``--help``'s order; named's alone where
    named is a subcommand."""
    names = [COMMANDS[named]] if named in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    return [importlib.import_module(f"vlcs._cli.{name}") for name in names]
