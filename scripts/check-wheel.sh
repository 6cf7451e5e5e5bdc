#!/usr/bin/env bash
# The package as a user gets it: build the wheel, install it (not editable, core only) into a fresh virtual
# environment outside the checkout, and run the quickstart from there: a baseline on the bundled demo data, the
# static viewer, the lm-eval task files, and the one-line message of `view` without its extra.
# Usage: scripts/check-wheel.sh [PYTHON]   (CI runs it from .ci/run; PYTHON defaults to python3)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
python="${1:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$python" -m venv "$work/venv"
bin="$work/venv/bin"
"$bin/pip" install --quiet --disable-pip-version-check build
"$bin/python" -m build --wheel --outdir "$work/dist" "$repo" >"$work/build.log" 2>&1 || {
    cat "$work/build.log"
    exit 1
}
wheel=("$work"/dist/rescue_bench-*.whl)
echo "built ${wheel[0]##*/}"
for name in LICENSE; do
    "$bin/python" -m zipfile -l "${wheel[0]}" | grep -q "/$name " || { echo "the wheel lacks $name"; exit 1; }
done
"$bin/pip" install --quiet --disable-pip-version-check -c "$repo/constraints.txt" "${wheel[0]}"

cd "$work"  # nothing of the checkout is importable from here
site="$("$bin/python" -c 'import rescue_bench, pathlib; print(pathlib.Path(rescue_bench.__file__).parent)')"
case "$site" in "$work"/venv/*) ;; *) echo "rescue_bench imported from $site, not the wheel"; exit 1 ;; esac

"$bin/rescue-bench" --version
# The README's quickstart, as written there.
"$bin/rescue-bench" run --model baseline/random --data demo | tee quickstart.txt
grep -qE "^ Both +51.56 +47.83 +49.62" quickstart.txt
grep -q "^baseline/random: finished, valid 445/445 (100.0%)$" quickstart.txt
grep -q "^run directory: runs/baseline-random_demo$" quickstart.txt
"$bin/rescue-bench" view runs/baseline-random_demo --bundle site
test -s site/index.html
tasks="$("$bin/rescue-bench" tasks lm-eval-path)"
test -s "$tasks/rescue_bench/itp.yaml" && test -s "$tasks/rescue_bench/utils.py"
set +e
message="$("$bin/rescue-bench" view runs/baseline-random_demo 2>&1)"
code=$?
set -e
expected="pip install 'rescue-bench[view]'"
if [ "$code" -ne 1 ] || [[ "$message" != *"$expected"* ]] || [[ "$message" == *Traceback* ]]; then
    echo "view on a core install: exit $code, expected 1 and one line naming $expected:"
    echo "$message"
    exit 1
fi
echo "wheel check passed: core install, baseline run, view --bundle, lm-eval tasks, view extra message"
