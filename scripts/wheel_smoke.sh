#!/usr/bin/env bash
# The installed package, as pipx or the Docker image gets it: build the wheel (and the sdist's wheel path: the .mo
# catalogs compiled by the build), install it into a clean venv with its dependencies from the index, and run the
# installed `gpu-advisor` from a folder outside the checkout (scripts/wheel_smoke.py says what is checked).
#   scripts/wheel_smoke.sh [PYTHON]      PYTHON runs the checks' driver and the fake Bot API (default .venv/bin/python)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
python="${1:-$repo/.venv/bin/python}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$repo"
"$python" -m pip wheel -q --no-deps -w "$work/dist" . 2>&1 | { grep -v "^WARNING: Location" || true; }
wheel="$(ls "$work"/dist/gpu_advisor-*.whl)"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$wheel" 2>&1 | { grep -v "^WARNING: Location" || true; }
mkdir "$work/elsewhere"
cd "$work/elsewhere"  # no checkout here: the installed package must find its own files
"$python" "$repo/scripts/wheel_smoke.py" --installed "$work/venv/bin/gpu-advisor" --checkout "$repo" --wheel "$wheel"
