"""``cmake --install`` gives a CMake package and a pkg-config file that work."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

CONSUMER_CMAKE = """
cmake_minimum_required(VERSION 3.20)
project(consumer C)
find_package(vlcs 0.1 REQUIRED)
add_executable(consumer main.c)
target_link_libraries(consumer PRIVATE vlcs::vlcs)
"""

MAIN_C = r"""
#include <stdio.h>
#include <vlcs.h>
int main(void) {
    vlcs_ctx *c = vlcs_ctx_create("installed");
    vlcs_ctx_setenv(c, "GREETING", "hello from a context");
    void *libc = vlcs_ctx_load(c, "libc.so.6");
    const char *(*get)(const char *) = (const char *(*)(const char *))vlcs_ctx_sym(libc, "getenv");
    printf("%s %s\n", vlcs_version(), get ? get("GREETING") : vlcs_error());
    return 0;
}
"""


def _install(build_dir: Path, prefix: Path) -> None:
    subprocess.run(
        ["cmake", "--install", str(build_dir), "--prefix", str(prefix)],
        check=True,
        capture_output=True,
    )


def test_find_package(build_dir, tmp_path):
    prefix = tmp_path / "prefix"
    _install(build_dir, prefix)
    proj = tmp_path / "consumer"
    proj.mkdir()
    (proj / "CMakeLists.txt").write_text(CONSUMER_CMAKE)
    (proj / "main.c").write_text(MAIN_C)
    out = tmp_path / "out"
    subprocess.run(
        ["cmake", "-S", str(proj), "-B", str(out), f"-DCMAKE_PREFIX_PATH={prefix}"],
        check=True,
        capture_output=True,
    )
    subprocess.run(["cmake", "--build", str(out)], check=True, capture_output=True)
    env = dict(os.environ, LD_LIBRARY_PATH=str(prefix / "lib"))
    run = subprocess.run(
        [str(out / "consumer")], capture_output=True, text=True, check=True, env=env
    )
    assert run.stdout.strip() == "0.1.0 hello from a context"


def test_pkg_config(build_dir, tmp_path):
    prefix = tmp_path / "prefix"
    _install(build_dir, prefix)
    pcdir = next(prefix.glob("lib*/pkgconfig"))
    env = dict(os.environ, PKG_CONFIG_PATH=str(pcdir))
    flags = subprocess.run(
        ["pkg-config", "--cflags", "--libs", "vlcs"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout.split()
    src = tmp_path / "main.c"
    src.write_text(MAIN_C)
    exe = tmp_path / "main"
    subprocess.run(["cc", str(src), "-o", str(exe), *flags], check=True)
    run = subprocess.run([str(exe)], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "0.1.0 hello from a context"
