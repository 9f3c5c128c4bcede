"""test_exec.py and test_exec_ends.py once more, every instance in copy
mode (VLCS_MODE=copies), as instances past glibc's 15 namespaces run: the
same programs (getopt, environ, OpenMP, error(), err(), abort, assert,
exec, faults, signals, timers, children, SIGPIPE, threads that exit)
compared with separate runs by the same tests.  C++ programs are refused
there, before anything of them loads (their std::cout would be made on the
process's stdout): the tests that run them here check that refusal."""

from __future__ import annotations

import subprocess

import pytest
from conftest import vlcs_cmd
from test_exec import *  # noqa: F403 (the tests themselves, collected again here)
from test_exec_ends import *  # noqa: F403


@pytest.fixture(autouse=True)
def copy_mode(monkeypatch):
    monkeypatch.setenv("VLCS_MODE", "copies")


def _refused_cxx(tmp_path, source: str, flags: list[str]) -> None:
    src = tmp_path / "hi.cpp"
    src.write_text(source)
    exe = tmp_path / "hi"
    subprocess.run(["g++", *flags, str(src), "-o", str(exe)], check=True)
    r = vlcs_cmd("exec", "-n", "2", "--", str(exe))
    assert r.returncode == 126 and r.stdout == "", r.stdout + r.stderr
    assert "run at most 15 instances of a program that links libstdc++" in r.stderr, r.stderr


def test_a_cpp_program_runs_and_vlcs_warns_of_nothing_the_user_did(tmp_path):
    src = '#include <iostream>\nint main() { std::cout << "hi" << std::endl; }\n'
    _refused_cxx(tmp_path, src, ["-fPIC", "-pie"])


def test_a_default_gxx_build_with_iostream_and_exceptions(tmp_path):
    src = (
        "#include <iostream>\n#include <stdexcept>\n"
        'struct S { S() { std::cout << "static constructor" << std::endl; } } s;\n'
        'int main() { try { throw std::runtime_error("x"); } catch (...) {} }\n'
    )
    _refused_cxx(tmp_path, src, [])


def test_debians_own_cxx_program():
    r = vlcs_cmd("exec", "-n", "2", "--", "apt-config", "dump", "APT::Architecture")
    assert r.returncode == 126 and r.stdout == "", r.stdout + r.stderr
    assert "links libstdc++" in r.stderr, r.stderr
