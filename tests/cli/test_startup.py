"""Starting the CLI loads what ``run`` needs and nothing heavy that only another command (or extra) uses.

Every command pays the imports of ``rescue_bench.cli.main``, and ``run``'s CPU per request is measured
whole-process against the peers (``benchmarks/bench_peers.py``): ``scipy.stats`` alone took about a second.
"""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("scipy", "sklearn", "torch", "matplotlib", "fastapi", "sqlalchemy", "playwright", "llama_cpp")


def test_the_cli_starts_without_the_heavy_libraries() -> None:
    probe = (
        "import json, sys; import rescue_bench.cli.main; "
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []
