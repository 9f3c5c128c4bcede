"""`vlcs exec` past glibc's 15 namespaces: the instances beyond hold renamed
copies and share the process's one libc (docs/copy-mode.md), whose
per-process state (streams, getopt's place, the locale, the program's name
in messages) each instance must still see as its own.  Compared with
separate runs of the same programs, instance by instance, and the base
afterwards."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from conftest import prog_lines, vlcs_cmd


def test_twenty_instances_fifteen_namespaces_then_copies_each_private(prog):
    # getopt, a static counter, setenv read back through environ, an OpenMP
    # team, exit(3): the five past the namespaces as the fifteen before
    r = vlcs_cmd("exec", "-n", "20", "--", prog, "-r", "{i}", "-t", "T", "x", timeout=300)
    assert r.returncode == 3, r.stderr
    seen = prog_lines(r.stdout)
    assert sorted(seen) == list(range(20)), r.stdout


def test_more_instances_than_a_process_runs_at_once_are_refused_before_any_runs(prog):
    r = vlcs_cmd("exec", "-n", "257", "--", prog)
    assert r.returncode == 126 and r.stdout == "", r.stdout + r.stderr
    assert "at most 256" in r.stderr, r.stderr


def _lines(data: bytes) -> list[bytes]:
    """Lines as vlcs exec's tags cut them: a last line without its newline
    is one too (xz's output is binary)."""
    lines = data.split(b"\n")
    return lines[:-1] if lines[-1] == b"" else lines


def _by_instance(data: bytes) -> dict[int, list[bytes]]:
    out: dict[int, list[bytes]] = {}
    for line in _lines(data):
        m = re.match(rb"\[(\d+)\] (.*)", line, re.S)
        assert m, f"untagged: {line!r}"
        out.setdefault(int(m.group(1)), []).append(m.group(2))
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("inputs")
    (d / "nums").write_text("".join(f"{(i * 7919) % 2003}\n" for i in range(2000)))
    (d / "small").write_text("b\na\nc\na\n")
    (d / "blob").write_bytes(os.urandom(1 << 20))
    return d


# Debian's programs, each in a way that reaches the state libc keeps once
# per process: streams, getopt clusters and long options (and its
# messages), error() and err() with the program's name, setlocale,
# environment, threads left running (xz), a program's own fopen.
PROGRAMS = [
    ["sort", "-rn", "-k1,1", "{d}/nums"],
    ["sort", "-u", "{d}/small"],
    ["uniq", "-c", "{d}/small"],
    ["shuf", "-n", "5", "--random-source={d}/nums", "{d}/nums"],
    ["sha256sum", "{d}/blob"],
    ["grep", "-c", "-e", "1", "{d}/nums"],
    ["sed", "-n", "s/a/X/gp", "{d}/small"],
    ["awk", "{s += $1} END {print s}", "{d}/nums"],
    ["ls", "-la", "{d}/missing"],
    ["wc", "--bogus"],
    ["head", "-qn2", "{d}/small", "{d}/nums"],
    ["cut", "-c1-2", "--complement", "{d}/nums"],
    ["date", "-d", "@86400", "+%F %T %Z"],
    ["getopt", "-o", "ab:c", "-l", "long:", "--", "-ab", "x", "--lo=3", "y", "-c"],
    ["printenv", "VLCS_INSTANCES"],
    ["xz", "-T2", "-c", "{d}/small"],
    ["od", "-An", "-c", "{d}/small"],
    ["bash", "-c", "printf '%s\\n' $VLCS_INSTANCE; exit 4"],
    ["tar", "-tf", "{d}/missing.tar"],
    ["dd", "if={d}/blob", "of=/dev/null", "bs=64k", "status=none"],
]


@pytest.mark.parametrize("mode", ["copies", "namespace"])
def test_programs_users_have_give_what_separate_runs_give(files, mode):
    n = 3
    env = dict(os.environ, VLCS_MODE=mode, LC_ALL="C.UTF-8", TZ="UTC")
    for argv in PROGRAMS:
        argv = [a.replace("{d}", str(files)) for a in argv]
        r = subprocess.run(
            [sys.executable, "-m", "vlcs", "exec", "-n", str(n), "--", *argv],
            capture_output=True,
            env=env,
            input=b"",
            timeout=120,
        )
        got_out, got_err = _by_instance(r.stdout), _by_instance(r.stderr)
        statuses = []
        for i in range(n):
            alone = subprocess.run(
                argv,
                capture_output=True,
                input=b"",
                env=dict(env, VLCS_INSTANCE=str(i), VLCS_INSTANCES=str(n)),
            )
            statuses.append(alone.returncode)
            assert got_out.get(i, []) == _lines(alone.stdout), (argv, i, r.stdout)
            assert got_err.get(i, []) == _lines(alone.stderr), (argv, i, r.stderr)
        assert r.returncode == next((s for s in statuses if s != 0), 0), (argv, r.stderr)


def test_the_base_keeps_its_locale_environment_getopt_and_streams(tmp_path, files):
    # sort and date set their locale from LC_ALL (setlocale(LC_ALL, "")),
    # parse options with getopt and write through stdout in copy mode: the
    # Python process that ran them still has its own of each
    code = f"""
import ctypes, json, locale, os, sys
import vlcs
libc = ctypes.CDLL(None)
def state():
    return {{
        "locale": locale.setlocale(locale.LC_ALL),
        "env": dict(os.environ),
        "optind": ctypes.c_int.in_dll(libc, "optind").value,
        "stdout": ctypes.c_void_p.in_dll(libc, "stdout").value,
    }}
before = state()
os.environ["VLCS_MODE"] = "copies"
st = vlcs.exec_instances(["sort", "-rn", "{files}/nums"], 3, env={{"LC_ALL": "C.UTF-8"}},
                         stdout="{tmp_path}/sorted.{{i}}")
st += vlcs.exec_instances(["date", "+%x"], 2, env={{"LC_ALL": "C.UTF-8"}}, output="plain",
                          stdout="{tmp_path}/date.{{i}}")
del os.environ["VLCS_MODE"]
print(json.dumps({{"before": before, "after": state(), "st": st}}))
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["st"] == [0] * 5, r
    assert r["before"] == r["after"], r
    want = subprocess.run(["sort", "-rn", str(files / "nums")], capture_output=True).stdout
    for i in range(3):
        assert (tmp_path / f"sorted.{i}").read_bytes() == want


POPEN = r"""
#include <stdio.h>
#include <stdlib.h>
int main(void) {
    setenv("PO_SET", "in-program", 1);
    FILE *f = popen("echo shell-sees $VLCS_INSTANCE $PO_SET", "r");
    char line[200];
    if (fgets(line, sizeof line, f))
        fputs(line, stdout);
    int st = pclose(f);
    FILE *w = popen("cat >&2; exit 3", "w");
    fputs("to-cat\n", w);
    int st2 = pclose(w);
    printf("pclose=%d pclose2=%d\n", st, st2 >> 8);
    fflush(stdout);
    return system("echo system-sees $VLCS_INSTANCE $PO_SET");
}
"""


def test_popen_and_system_in_copy_mode_start_their_shell_with_the_instances_environment(
    tmp_path,
):
    src = tmp_path / "po.c"
    src.write_text(POPEN)
    exe = tmp_path / "po"
    subprocess.run(["gcc", str(src), "-o", str(exe)], check=True)
    n = 3
    env = dict(os.environ, VLCS_MODE="copies")
    r = subprocess.run(
        [sys.executable, "-m", "vlcs", "exec", "-n", str(n), "--", str(exe)],
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    out, err = _by_instance(r.stdout), _by_instance(r.stderr)
    for i in range(n):
        alone = subprocess.run(
            [str(exe)], capture_output=True, env=dict(env, VLCS_INSTANCE=str(i)), timeout=60
        )
        assert out[i] == _lines(alone.stdout) and err[i] == _lines(alone.stderr), (i, r)
        assert out[i][0] == b"shell-sees %d in-program" % i, out[i]


def test_the_interposer_holds_no_thread_local_storage():
    # every context loads a copy of it: a TLS segment there makes each copy
    # a TLS module of its own (64 copy-mode contexts importing numpy then
    # stopped on ld.so's assertion in _dl_add_to_slotinfo)
    import struct

    import vlcs

    data = (vlcs.native_dir() / "libvlcs_interpose.so").read_bytes()
    phoff, phentsize, phnum = (
        struct.unpack_from("<Q", data, 32)[0],
        struct.unpack_from("<H", data, 54)[0],
        struct.unpack_from("<H", data, 56)[0],
    )
    kinds = [struct.unpack_from("<I", data, phoff + i * phentsize)[0] for i in range(phnum)]
    pt_tls = 7
    assert kinds and pt_tls not in kinds, kinds


_CXX = r"""
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>
struct Greeter { Greeter() { std::cout << "constructed before main" << std::endl; } } greeter;
int main(int argc, char **argv) {
    std::string line;
    long sum = 0, n = 0;
    while (std::getline(std::cin, line)) { sum += std::stol(line); n++; }
    std::cout << "read " << n << " lines, sum " << sum << "\n";
    try { throw std::runtime_error(argv[1]); }
    catch (const std::exception &e) { std::cout << "caught " << e.what() << std::endl; }
    std::vector<long> v(1000, 2);
    long t = 0;
    for (long x : v) t += x;
    std::cerr << "on cerr " << t << std::endl;
    std::cout << "last, no newline " << t;
    return argc > 2 ? std::atoi(argv[2]) : 0;
}
"""


def test_a_cpp_program_past_the_namespaces_runs_as_separate_runs(tmp_path):
    # libstdc++ makes std::cout, std::cin and std::cerr at its load: past
    # the namespaces its copy binds them to the context's streams, not the
    # process's, so the instances past 15 answer as the fifteen before
    src = tmp_path / "cxx.cpp"
    src.write_text(_CXX)
    exe = tmp_path / "cxx"
    subprocess.run(["g++", "-O1", str(src), "-o", str(exe)], check=True)
    feed = "".join(f"{k}\n" for k in range(1, 101))
    alone = subprocess.run([str(exe), "E{i}", "4"], input=feed, capture_output=True, text=True)
    assert alone.returncode == 4, alone.stderr
    r = vlcs_cmd(
        "exec",
        "-n",
        "18",
        "--stdin",
        "all",
        "--stdout",
        str(tmp_path / "out.{i}"),
        "--stderr",
        str(tmp_path / "err.{i}"),
        "--",
        str(exe),
        "E{i}",
        "4",
        input=feed,
        timeout=300,
    )
    assert r.returncode == 4, r.stderr
    assert r.stdout == "" and r.stderr == "", r.stdout + r.stderr  # nothing on the process's
    for i in range(18):
        out = (tmp_path / f"out.{i}").read_text()
        assert out == alone.stdout.replace("E{i}", f"E{i}"), (i, out)
        assert (tmp_path / f"err.{i}").read_text() == alone.stderr, i


def test_a_time_zone_given_to_every_instance_reaches_those_past_the_namespaces():
    # libc keeps one zone per process: `--env TZ=` is every instance's, and
    # the vlcs process takes it too, so that the two past the namespaces see it
    env = dict(os.environ, TZ="UTC")
    r = vlcs_cmd(
        "exec", "-n", "17", "--env", "TZ=Asia/Tokyo", "--", "date", "-d", "@0", "+%H %Z", env=env
    )
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == sorted(f"[{i}] 09 JST" for i in range(17)), r.stdout
