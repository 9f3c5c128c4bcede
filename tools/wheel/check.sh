#!/usr/bin/env bash
# The wheel and the sdist as users get them, checked as users install them.
#   tools/wheel/check.sh [PYTHON]     (./run test runs it with .venv's python)
# 1. python -m build: the sdist, then the wheel built from that sdist (so the
#    sdist holds all a build needs); vlcs-bench's wheel.
# 2. auditwheel repair --plat manylinux_2_34_x86_64: refuses a wheel that asks
#    for a newer glibc symbol than README promises.
# 3. A fresh venv on a PATH with no compiler: pip install the repaired wheel
#    and numpy, nothing else (no matplotlib); tools/wheel/smoke.py.  Then
#    pip install 'WHEEL[plots]' and vlcs-bench's wheel: smoke.py --plots and
#    the Python demo with its chart.
# 4. Another fresh venv: pip install vlcs-*.tar.gz (pip builds it, in
#    isolation, from the registry's build tools); smoke.py.
# The wheels land in build/dist/.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${1:-$root/.venv/bin/python}
dist=$root/build/dist
work=$root/build/wheel-check
base=$("$py" -c 'import sys; print(sys._base_executable)')
say() { printf '  -- %s\n' "$*"; }
quiet() { "$@" 2>&1 | { grep -v '^WARNING: Location' || true; }; return "${PIPESTATUS[0]}"; }

rm -rf "$dist" "$work"
mkdir -p "$dist" "$work"
say "building the sdist, the wheel from it, and vlcs-bench's wheel"
quiet "$py" -m build -q --no-isolation -o "$dist/raw" "$root" >/dev/null
quiet "$py" -m build -q --no-isolation --wheel -o "$dist" "$root/bench" >/dev/null
say "auditwheel repair --plat manylinux_2_34_x86_64"
PATH="$(dirname "$py"):$PATH" quiet "$py" -m auditwheel repair -w "$dist" \
    --plat manylinux_2_34_x86_64 "$dist"/raw/vlcs-*.whl >/dev/null
mv "$dist"/raw/vlcs-*.tar.gz "$dist"/
wheel=$(ls "$dist"/vlcs-*manylinux_2_34_x86_64.whl)
bench=$(ls "$dist"/vlcs_bench-*.whl)
sdist=$(ls "$dist"/vlcs-*.tar.gz)
ls -l "$dist" | sed 's/^/     /'

# A PATH with every command of this machine but the compilers.
nocc=$work/bin
mkdir -p "$nocc"
for d in /usr/local/bin /usr/bin /bin; do
    for f in "$d"/*; do
        n=${f##*/}
        case $n in
            cc | c++ | cpp | gcc* | g++* | clang* | tcc | *-gcc* | *-g++* | *-cc | *-c++ | *-cpp*) continue ;;
        esac
        [ -e "$nocc/$n" ] || ln -s "$f" "$nocc/$n"
    done
done

say "a fresh venv, PATH without a compiler: pip install $(basename "$wheel") numpy"
"$base" -m venv "$work/venv"
v=$work/venv/bin
(
    export PATH="$v:$nocc"
    unset CC CXX
    ! command -v cc gcc >/dev/null || { echo "check.sh: a compiler is still on PATH" >&2; exit 1; }
    quiet pip install -q --disable-pip-version-check "$wheel" numpy
    python "$root/tools/wheel/smoke.py" --no-compiler
    say "pip install '$(basename "$wheel")[plots]' $(basename "$bench")"
    quiet pip install -q --disable-pip-version-check "$wheel[plots]" "$bench"
    python "$root/tools/wheel/smoke.py" --no-compiler --plots
    cd "$work"
    vlcs demo python --repeats 1 --png "$work/demo.png" | tail -4
    [ "$(head -c 4 "$work/demo.png" | od -An -c | tr -d ' ')" = '211PNG' ] \
        || { echo "check.sh: vlcs demo python drew no PNG" >&2; exit 1; }
)

say "another fresh venv: pip install $(basename "$sdist") numpy (pip builds it)"
"$base" -m venv "$work/venv-sdist"
(
    export PATH="$work/venv-sdist/bin:$PATH"
    quiet pip install -q --disable-pip-version-check "$sdist" numpy
    python "$root/tools/wheel/smoke.py"
)
say "the wheel, the sdist and vlcs-bench install and work as users install them"
