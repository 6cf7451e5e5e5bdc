"""The console script's collector policy (:mod:`rescue_bench.cli.collector`), applied by the script only.

Each case runs in a fresh interpreter: the policy is process-wide, and the test process must keep its own.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import rescue_bench
from rescue_bench.cli.collector import ENV_VAR, YOUNG_THRESHOLD


def _probe(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != ENV_VAR} | (env or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environ)


# An exit handler registered before the policy runs after its own (atexit runs them last in, first out), so
# it sees whether the policy froze the heap at exit.
_FROZEN_AT_EXIT = "import atexit, gc; atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0))\n"


def _apply_policy(env: dict[str, str] | None = None) -> tuple[list[object], str]:
    """``apply_policy()`` in a fresh interpreter: [choice, thresholds before, after, freeze count], and what
    the exit handler saw."""
    code = _FROZEN_AT_EXIT + (
        "import json\nfrom rescue_bench.cli.collector import apply_policy\n"
        "before = gc.get_threshold(); chosen = apply_policy()\n"
        "print(json.dumps([chosen, before, gc.get_threshold(), gc.get_freeze_count()]))\n"
    )
    done = _probe(code, env)
    assert done.returncode == 0, done.stderr
    figures, at_exit = done.stdout.strip().splitlines()
    return json.loads(figures), at_exit


def test_the_policy_raises_the_young_threshold_and_freezes_at_exit() -> None:
    (chosen, before, after, frozen_during_run), at_exit = _apply_policy()
    assert chosen == "tuned"
    assert after == [YOUNG_THRESHOLD, *before[1:]] and before[0] != YOUNG_THRESHOLD
    assert frozen_during_run == 0  # nothing is frozen while the command works
    assert at_exit == "frozen True"


def test_default_keeps_pythons_collector() -> None:
    (chosen, before, after, _), at_exit = _apply_policy({ENV_VAR: "Default"})
    assert chosen == "default" and before == after
    assert at_exit == "frozen False"


def test_an_unknown_policy_is_a_usage_error_of_the_console_script() -> None:
    code = "import sys; from rescue_bench.cli.main import main; sys.argv = ['rescue-bench', '-h']; main()"
    done = _probe(code, {ENV_VAR: "off"})
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: {ENV_VAR}='off': choose one of tuned, default"
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_the_console_script_applies_the_policy() -> None:
    code = _FROZEN_AT_EXIT + (
        "import sys\nfrom rescue_bench.cli.main import main\n"
        "sys.argv = ['rescue-bench', '--version']\n"
        "try:\n    main()\nfinally:\n    print('threshold', gc.get_threshold()[0])\n"
    )
    done = _probe(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-2:] == [f"threshold {YOUNG_THRESHOLD}", "frozen True"]


def test_a_run_from_python_leaves_the_collector_alone(tmp_path: Path) -> None:
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    spec = rescue_bench.RunSpec(model="baseline/random", data="demo", tasks=["itp"])  # type: ignore[arg-type]
    result = rescue_bench.run(spec, out=tmp_path / "x")
    assert result.status == "finished"
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen
    assert gc.isenabled()
