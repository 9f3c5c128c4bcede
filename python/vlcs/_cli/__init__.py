"""The ``vlcs`` command's subcommands, one module each: ``add(sub)`` makes a
subcommand's parser, whose ``func`` runs it (vlcs.cli builds and dispatches)."""

from vlcs._cli import bench, check, doctor, exec_, info, run, shim, topo, trace, tune

# in the order ``vlcs --help`` lists them
SUBCOMMANDS = (run, exec_, topo, trace, doctor, info, bench, shim, check, tune)
