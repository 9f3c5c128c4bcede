"""test_exec.py and test_exec_ends.py once more, every instance in copy
mode (VLCS_MODE=copies), as instances past glibc's 15 namespaces run: the
same programs (getopt, environ, OpenMP, error(), err(), abort, assert,
exec, faults, signals, timers, children, SIGPIPE, threads that exit)
compared with separate runs by the same tests, C++ programs among them
(their libraries' stdin, stdout and stderr, std::cout's, are the
context's: src/exec_streams.c)."""

from __future__ import annotations

import pytest
from test_exec import *  # noqa: F403 (the tests themselves, collected again here)
from test_exec_ends import *  # noqa: F403


@pytest.fixture(autouse=True)
def copy_mode(monkeypatch):
    monkeypatch.setenv("VLCS_MODE", "copies")
