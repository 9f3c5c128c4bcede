"""The vlcs command as a user meets it after ``pip install .``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import vlcs_cmd

C_PROGRAM = r"""
#include <stdio.h>
#include <vlcs.h>
typedef int (*nthreads_fn)(void);
int main(void) {
    vlcs_ctx *c = vlcs_ctx_create("one");
    if (vlcs_ctx_set_cpus(c, "0") != 0) { puts(vlcs_error()); return 1; }
    void *blas = vlcs_ctx_load(c, "libopenblas.so.0");
    if (!blas) { puts(vlcs_error()); return 1; }
    nthreads_fn n = (nthreads_fn)vlcs_ctx_sym(blas, "openblas_get_num_threads");
    printf("threads=%d\n", n());
    if (vlcs_ctx_set_cpus(c, "0-") == 0) return 1;
    printf("error=%s\n", vlcs_error());
    return 0;
}
"""

CXX_PROGRAM = r"""
#include <cstdio>
#include <vlcs.hpp>
int main() {
    vlcs::Context c("cxx");
    c.set_allowed_cpus({0});
    try { vlcs::Loader l(c, "libnot-a-library.so.9"); }
    catch (const vlcs::Error &e) { std::printf("caught: %s\n", e.what()); }
    return 0;
}
"""


def _build_and_run(tmp_path, compiler: str, source_name: str, program: str) -> str:
    """Compile with the flags `vlcs info` gives, run, return stdout."""
    flags = vlcs_cmd("info", "--cflags", "--libs", check=True).stdout.split()
    src = tmp_path / source_name
    src.write_text(program)
    exe = tmp_path / "app"
    subprocess.run([compiler, str(src), "-o", str(exe), *flags], check=True)
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout


def test_info_flags_compile_and_run_a_c_program(tmp_path):
    out = _build_and_run(tmp_path, "cc", "app.c", C_PROGRAM)
    assert "threads=1" in out  # OpenBLAS sized itself to the 1-CPU context
    assert "error=Error setting CPUs of context 'one': malformed CPU list \"0-\"" in out


def test_info_flags_compile_a_cxx_program(tmp_path):
    out = _build_and_run(tmp_path, "c++", "app.cpp", CXX_PROGRAM)
    assert "caught: Error loading libnot-a-library.so.9 into context 'cxx'" in out


def test_info_json_describes_the_install():
    info = json.loads(vlcs_cmd("info", "--json", check=True).stdout)
    assert os.path.exists(info["library"])
    assert os.path.exists(os.path.join(info["include_dir"], "vlcs.h"))
    assert info["cpus_usable"] == sorted(os.sched_getaffinity(0))


def test_run_sets_the_tunables_and_keeps_the_users():
    code = "import os; print(os.environ['GLIBC_TUNABLES'])"
    env = dict(os.environ, GLIBC_TUNABLES="glibc.malloc.check=0")
    out = vlcs_cmd("run", "--", sys.executable, "-c", code, env=env, check=True).stdout
    assert out.strip().split(":") == [
        "glibc.malloc.check=0",
        "glibc.rtld.nns=16",
        "glibc.rtld.optional_static_tls=65536",
    ]


def test_run_sizes_static_tls_for_the_contexts_asked_for():
    code = "import os; print(os.environ['GLIBC_TUNABLES'])"
    env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
    out = vlcs_cmd("run", "--contexts", "1000", "--", sys.executable, "-c", code, env=env)
    assert out.stdout.strip() == "glibc.rtld.nns=16:glibc.rtld.optional_static_tls=256000"
    # fewer: never below the default, which holds 256 libgomp copies and more
    out = vlcs_cmd("run", "--contexts", "16", "--", sys.executable, "-c", code, env=env)
    assert out.stdout.strip().endswith("optional_static_tls=65536")
    bad = vlcs_cmd("run", "--contexts", "0", "--", "true")
    assert bad.returncode == 2
    assert "--contexts wants a count from 1 to 65536" in bad.stderr


def test_run_passes_arguments_and_exit_status():
    r = vlcs_cmd("run", "--", sys.executable, "-c", "import sys; sys.exit(len(sys.argv))", "a")
    assert r.returncode == 2


def test_run_without_a_program_is_a_usage_error():
    r = vlcs_cmd("run")
    assert r.returncode == 2
    assert "no program given" in r.stderr


def test_run_of_a_missing_program_says_so():
    r = vlcs_cmd("run", "--", "/nonexistent/program")
    assert r.returncode == 127
    assert "cannot run '/nonexistent/program'" in r.stderr


def test_python_service_and_errors():
    code = (
        "import vlcs\n"
        "vlcs.service('libm.so.6')\n"
        "try:\n"
        "    vlcs.service('libno-such.so.4')\n"
        "except vlcs.VlcsError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "Error adding service library libno-such.so.4" in out.stdout


def test_bench_without_its_package_says_how_to_get_it():
    # vlcs-bench is a package of its own: a runtime-only install must say so.
    code = (
        "import sys; sys.modules['vlcs_bench'] = None\n"
        "from vlcs.cli import main; raise SystemExit(main())"
    )
    for cmd in ("bench", "demo"):
        r = subprocess.run(
            [sys.executable, "-c", code, cmd, "core"], capture_output=True, text=True
        )
        assert r.returncode == 1, r.stderr
        assert f"vlcs {cmd}: the benchmarks and demos are a separate package" in r.stderr
        assert "pip install ./bench" in r.stderr


def _json_of(code: str) -> dict:
    """What a fresh interpreter running code printed last, as JSON."""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_import_vlcs_leaves_what_it_does_not_need_yet_for_its_first_use():
    # vlcs exec's start-up, and every script's `import vlcs`: contexts
    # (ctypes and the import machinery), the thread pools
    # (concurrent.futures, and logging with it), paths as objects,
    # subprocess, typing and the tuner are imported when first used; a context's
    # executor then works, and so do the names and submodules the package
    # had before (vlcs.shim, a private vlcs._lib).
    code = (
        "import json, sys\n"
        "before = set(sys.modules)\n"
        "import vlcs\n"
        "new = sorted(set(sys.modules) - before)\n"
        "ctx = vlcs.VLC(cpus='0')\n"
        "ran = ctx.submit(lambda: vlcs.current() is ctx).result()\n"
        "names = all(hasattr(vlcs, n) for n in vlcs.__all__) and not hasattr(vlcs, 'nope')\n"
        "subs = callable(vlcs.shim.generate) and callable(vlcs._lib.lib)\n"
        "print(json.dumps({'new': new, 'ran': ran, 'lib': vlcs.library_path().exists(),\n"
        "                  'names': names, 'subs': subs}))\n"
    )
    r = _json_of(code)
    heavy = {"concurrent.futures", "logging", "pathlib", "subprocess", "platform", "vlcs._tune"}
    heavy |= {"typing"}
    heavy |= {"ctypes", "vlcs._context", "vlcs._isolation.imports", "vlcs._own"}
    assert not heavy & set(r["new"]), sorted(heavy & set(r["new"]))
    assert r["ran"] and r["lib"] and r["names"] and r["subs"], r


def test_vlcs_exec_starts_without_what_it_does_not_use():
    # subprocess and shutil (argparse's terminal width) are not vlcs exec's,
    # nor what makes a context a home for Python code (the import
    # machinery, pickle for the own runtimes) or typing: its start-up
    # imports none of them, and its instances still run.
    code = (
        "import json, sys\n"
        "sys.argv = ['vlcs', 'exec', '-n', '2', '--', 'true']\n"
        "from vlcs.cli import main\n"
        "rc = main()\n"
        "print(json.dumps({'rc': rc, 'modules': sorted(sys.modules)}))\n"
    )
    r = _json_of(code)
    unused = {"subprocess", "shutil", "concurrent.futures", "typing", "pickle"}
    unused |= {"vlcs._context", "vlcs._isolation.imports", "vlcs._own"}
    assert r["rc"] == 0 and not unused & set(r["modules"]), sorted(unused & set(r["modules"]))
