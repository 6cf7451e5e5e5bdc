"""The live progress display."""

from __future__ import annotations

import io

from rich.console import Console

from rescue_bench.engine.progress import Progress


def test_counters_and_display() -> None:
    out = io.StringIO()
    progress = Progress(enabled=True, console=Console(file=out, force_terminal=True, width=150))
    progress.start({"itp": (10, 4), "er": (5, 0)})
    progress.update("itp", done=3, cache_hits=2, retries=1, failures=1, tokens=1500)
    progress.stop()
    assert progress.counters["itp"].done == 7 and progress.counters["er"].done == 0
    text = out.getvalue()
    assert "itp" in text and "7/10" in text and "hits 2 · retries 1 · failed 1 · tokens 1,500" in text


def test_disabled_draws_nothing_but_counts(capsys) -> None:  # type: ignore[no-untyped-def]
    progress = Progress(enabled=False)
    progress.start({"rpp": (3, 0)})
    progress.update("rpp", done=3)
    progress.stop()
    assert progress.counters["rpp"].done == 3
    assert capsys.readouterr().err == ""
    assert Progress.for_terminal(quiet=True).enabled is False


def test_the_window_shows_while_below_its_ceiling_and_the_last_draw_has_the_final_counts() -> None:
    out = io.StringIO()
    progress = Progress(enabled=True, console=Console(file=out, force_terminal=True, width=150))
    progress.start({"itp": (445, 0), "rpp": (10, 0)})
    progress.update("itp", done=434, window=(3, 16))
    drawn = out.getvalue()
    progress.update("rpp", done=10, window=(16, 16))
    progress.update("itp", done=11)  # the last batch lands just before the run ends: no refresh tick between
    progress.stop()
    final = out.getvalue()[len(drawn) :]
    assert progress.counters["itp"].summary((3, 16)).endswith("in flight ≤ 3 of 16")
    assert "445/445" in final and "10/10" in final
    assert "in flight" not in final[final.rfind("itp") :]  # a live fact: the last draw shows counts only
