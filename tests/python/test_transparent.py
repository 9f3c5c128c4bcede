"""Transparent mode: an unmodified C++ program calls a thread-unsafe library
(arpack-ng from Debian) directly; through a `vlcs shim`, calls from each
thread reach its context's copy."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import vlcs_cmd

ARPACK = "/usr/lib/x86_64-linux-gnu/libarpack.so.2"
SOURCE = Path(__file__).with_name("data") / "transparent_arpack.cpp"


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    out = tmp_path_factory.mktemp("transparent")
    flags = vlcs_cmd("info", "--cflags", "--libs", check=True).stdout.split()
    exe = out / "transparent_arpack"
    # Linked against the real library, as any program would be.
    subprocess.run(["c++", "-O2", str(SOURCE), ARPACK, "-o", str(exe), *flags], check=True)
    return exe


@pytest.fixture(scope="module")
def shim_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("shim")
    r = vlcs_cmd("shim", ARPACK, "-o", str(out), "--json")
    assert r.returncode == 0, r.stderr
    return out


def test_shim_report_lists_what_cannot_be_dispatched(shim_dir):
    report = json.loads((shim_dir / "libarpack.so.2.json").read_text())
    assert report["soname"] == "libarpack.so.2"
    assert report["functions"] > 50
    # arpack-ng's Fortran common blocks are data: reported, not shimmed.
    assert "debug_" in report["data_symbols_not_dispatched"]
    nm = subprocess.run(
        ["nm", "-D", "--defined-only", str(shim_dir / "libarpack.so.2")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    names = {line.split()[-1] for line in nm.splitlines()}
    assert "dsaupd_" in names and "debug_" not in names


def test_each_thread_reaches_its_contexts_copy(program, shim_dir):
    env = dict(os.environ, LD_LIBRARY_PATH=str(shim_dir))
    out = subprocess.run([str(program)], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "interleaved in contexts: ok ok" in out.stdout
    assert "concurrent threads: 3/3 rounds correct" in out.stdout


def test_outside_contexts_the_calls_share_one_copy(program, shim_dir):
    # Both solves reach the default context's single copy and clash: wrong
    # results, or a corrupted heap.  This is what the shim saves the threads from.
    env = dict(os.environ, LD_LIBRARY_PATH=str(shim_dir))
    out = subprocess.run(
        [str(program), "outside"], capture_output=True, text=True, env=env, timeout=300
    )
    assert "both ok" not in out.stdout
    assert out.returncode != 0 or "interleaved outside contexts: broken" in out.stdout


def test_without_the_shim_the_program_says_what_to_do(program):
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    out = subprocess.run([str(program)], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 3
    assert "no vlcs shim for it is loaded in this process" in out.stdout
    assert "vlcs shim" in out.stdout


def test_shim_of_a_file_that_is_not_a_library(tmp_path):
    bogus = tmp_path / "libbogus.so"
    bogus.write_text("not an ELF file")
    r = vlcs_cmd("shim", str(bogus), "-o", str(tmp_path / "out"))
    assert r.returncode == 1
    assert "is not a 64-bit little-endian ELF file" in r.stderr


def test_cxx_methods_are_dispatched_and_vtables_reported(tmp_path):
    data = Path(__file__).with_name("data")
    real = tmp_path / "real" / "libcxxcounter.so.1"
    real.parent.mkdir()
    subprocess.run(
        [
            "c++",
            "-shared",
            "-fPIC",
            "-O2",
            str(data / "cxx_counter.cpp"),
            "-o",
            str(real),
            "-Wl,-soname,libcxxcounter.so.1",
        ],
        check=True,
    )
    r = vlcs_cmd("shim", str(real), "-o", str(tmp_path / "shim"), "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["cxx_functions"] >= 3  # Acc::add, peek, make_shape, ...
    assert "_ZTVN7counter5ShapeE" in report["cxx_vtables_and_typeinfo_not_dispatched"]

    flags = vlcs_cmd("info", "--cflags", "--libs", check=True).stdout.split()
    exe = tmp_path / "user"
    subprocess.run(
        ["c++", "-O2", str(data / "cxx_counter_user.cpp"), str(real), "-o", str(exe), *flags],
        check=True,
    )
    env = dict(os.environ, LD_LIBRARY_PATH=str(tmp_path / "shim"))
    out = subprocess.run([str(exe)], capture_output=True, text=True, env=env, check=True)
    # Each context's copy counted alone; the default copy was never touched.
    assert out.stdout.strip() == "a=3 b=50 default=0"
