#!/usr/bin/env bash
# Build the wheel, install it with only its declared dependencies into a clean venv (no
# system site-packages, no dev extra: numpy is absent), and run tools/wheel_smoke.py there:
# export, save, load in a fresh process, call, reject.  Run by .ci/run after `make test`.
#   tools/wheel_smoke.sh            # torch as pinned in constraints.txt
#   PY=python3.12 tools/wheel_smoke.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python3}
HOST_PY=${HOST_PY:-$PY}        # the Python that runs `build` (needs the `build` package)
work=$(mktemp -d "${TMPDIR:-/tmp}/safetrace-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT
if ! "$HOST_PY" -c "import build" 2>/dev/null; then
    "$PY" -m venv "$work/build-env"
    "$work/build-env/bin/pip" install -q build
    HOST_PY="$work/build-env/bin/python"
fi
# build from a copy of the tracked files so that the tree's build/ and egg-info stay untouched
git ls-files -z | tar --null -T - -cf - | (mkdir "$work/src" && tar -xf - -C "$work/src")
log="$work/log"
quiet() { "$@" >>"$log" 2>&1 || { cat "$log" >&2; echo "failed: $*" >&2; exit 1; }; }
quiet "$HOST_PY" -m build --wheel --outdir "$work/dist" "$work/src"
quiet "$PY" -m venv "$work/venv"
quiet "$work/venv/bin/pip" install -c constraints.txt "$work"/dist/*.whl
echo "installed $(basename "$work"/dist/*.whl) with: $("$work/venv/bin/pip" freeze | tr '\n' ' ')"
cd "$work" && "$work/venv/bin/python" "$OLDPWD/tools/wheel_smoke.py"
