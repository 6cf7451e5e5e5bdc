"""Transcript rendering per mode, the one context-window rule, and the deterministic selections."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rescue_bench.data.schema import Row, Sample
from rescue_bench.errors import ConfigError
from rescue_bench.records import Shown
from rescue_bench.tasks import task_info
from rescue_bench.tasks.base import MODES, RowCache, TaskConfig
from rescue_bench.tasks.context import (
    clean,
    early_cutoff,
    even_sample,
    pick_evenly,
    render_row,
    row_records,
    shown_rows,
    window,
)

RICH = Row(
    row_index=4,
    start_time=61.2,
    end_time=66.0,
    primary_speaker="Nadia",
    target=["Tom"],
    dialogue_cleaned="I told you\ntwice.",
    tone_of_voice="sharp",
    body_posture=[
        {"person": "Nadia", "description": "leans in"},
        {"person": "Nadia", "description": "arms tight"},
    ],
    facial_expressions=["a plain-string cue"],
    self_directed_behavior=[{"person": "Tom", "description": ""}],
    interaction_behavior=[{"initiator": "Nadia", "target": ["Tom"], "description": "points at him"}],
    background_dialogue=[{"speaker": "Tom", "target": ["Nadia"], "content": "here we go"}],
    internal_emotion=[{"person": "Nadia", "emotion_description": "feels ignored", "intensity": 8}],
    relation_cycle_state="attack_attack",
)


def test_dialogue_line_is_compact_and_has_no_mode_cues() -> None:
    line = render_row(RICH, "dialogue")
    assert line == "[4] Nadia -> Tom (61.2-66s): I told you twice. | background: Tom -> Nadia: here we go"


@pytest.mark.parametrize(
    ("mode", "tone", "visual"),
    [
        ("dialogue", False, False),
        ("video", False, False),
        ("audio", True, False),
        ("visual", False, True),
        ("audiovisual", True, True),
    ],
)
def test_each_mode_carries_its_own_cues(mode: str, tone: bool, visual: bool) -> None:
    line = render_row(RICH, mode)  # type: ignore[arg-type]
    assert ("tone: sharp" in line) is tone
    assert ("posture: Nadia: leans in / arms tight" in line) is visual
    assert ("face: a plain-string cue" in line) is visual
    assert ("interaction: Nadia -> Tom: points at him" in line) is visual


@pytest.mark.parametrize("mode", MODES)
def test_lines_never_show_gold_annotations_nulls_or_empty_fields(mode: str) -> None:
    line = render_row(RICH, mode)  # type: ignore[arg-type]
    for hidden in ("feels ignored", "attack_attack", "None", "null", "self:", "\n"):
        assert hidden not in line


def test_a_bare_row_renders_without_time_or_empty_parts() -> None:
    row = Row(row_index=1, primary_speaker="Ana")
    assert render_row(row, "audiovisual") == "[1] Ana: (no words)"


def test_window_rule() -> None:
    rows = list(range(1, 11))
    assert window(rows, 6, -1) == (1, 2, 3, 4, 5)
    assert window(rows, 6, 0) == ()
    assert window(rows, 6, 2) == (4, 5)
    assert window(rows, 6, 50) == (1, 2, 3, 4, 5)
    assert window(rows, 1, -1) == ()
    assert window(rows, 11, 1) == (10,)


def test_context_size_defaults_to_the_tasks_and_rejects_nonsense() -> None:
    itp, rpp = task_info("itp"), task_info("rpp")
    assert (TaskConfig().shown_size(itp), TaskConfig().shown_size(rpp)) == (3, -1)
    assert TaskConfig(context_size=0).shown_size(rpp) == 0
    with pytest.raises(ConfigError, match=r"-1 .* 0 .* N"):
        TaskConfig(context_size=-2).shown_size(itp)


def test_shown_rows_lists_prior_then_current() -> None:
    rows = ({"row_index": 2, "line": "x"}, {"row_index": 3, "line": "y"})
    assert shown_rows(Shown("dialogue", 2, rows=rows, current={"row_index": 4, "line": "z"})) == (2, 3, 4)
    assert shown_rows(Shown("dialogue", 0)) == shown_rows(None) == ()


def test_even_selection_uses_round_half_to_even() -> None:
    # n=7, limit=5: k*(6/4) = 0, 1.5, 3, 4.5, 6 -> round: 0, 2, 3, 4, 6 (1.5 -> 2, 4.5 -> 4)
    assert pick_evenly(list(range(7)), 5, key=int) == [0, 2, 3, 4, 6]
    assert even_sample(list(range(7)), 5, key=int) == [0, 2, 3, 4, 6]


def test_single_pick_differs_between_itp_and_checkpoints() -> None:
    assert pick_evenly([10, 20, 30, 40], 1, key=int) == [10]
    assert even_sample([10, 20, 30, 40], 1, key=int) == [30]


def test_no_selection_when_few_items_or_no_limit() -> None:
    assert pick_evenly([1, 2], 5, key=int) == [1, 2]
    assert pick_evenly([1, 2, 3], 0, key=int) == [1, 2, 3]
    assert even_sample([], 3, key=int) == []


@pytest.mark.parametrize(("rows", "first"), [(0, 1), (1, 1), (2, 2), (3, 2), (10, 4), (16, 6), (112, 35)])
def test_early_cutoff_drops_the_first_30_percent(rows: int, first: int) -> None:
    assert early_cutoff(rows) == first


def test_rendered_rows_are_kept_by_the_cache_they_are_given(make_sample: Callable[..., Sample]) -> None:
    sample, cache = make_sample(["Ana", "Ben"]), RowCache()
    records = row_records(sample, "dialogue", cache)
    assert row_records(sample, "dialogue", cache) is records
    assert row_records(sample, "audio", cache) is not records
    assert row_records(sample, "dialogue", RowCache()) is not records  # another run's plans: its own rows
    assert row_records(sample, "dialogue") is not records and row_records(sample, "dialogue") == records
    # An equal sample that is another object (a sample stage's copy) gets rows of its own.
    assert row_records(sample.model_copy(), "dialogue", cache) is not records


def test_a_config_and_its_copies_share_one_cache(make_sample: Callable[..., Sample]) -> None:
    sample, cfg = make_sample(["Ana", "Ben"]), TaskConfig()
    records = row_records(sample, "dialogue", cfg.rows)
    assert row_records(sample, "dialogue", replace(cfg, context_size=1).rows) is records
    assert TaskConfig().rows is not cfg.rows and TaskConfig() == cfg


_REGEX_SPACE = re.compile(r"\s")
_SPACE_RUNS = re.compile(r"\s+")


def test_clean_splits_at_exactly_the_regex_whitespace() -> None:
    # clean() relies on str.split() and the regex \s agreeing on every code point; prompts depend on it.
    chars = (chr(c) for c in range(sys.maxunicode + 1))
    differ = [hex(ord(c)) for c in chars if c.isspace() != bool(_REGEX_SPACE.fullmatch(c))]
    assert differ == []


@given(st.text(alphabet=st.sampled_from(" \t\n\r\x0b\x0c\x1c\x85\xa0\u2028\u3000ab.")))
def test_clean_collapses_like_the_regex(text: str) -> None:
    assert clean(text) == _SPACE_RUNS.sub(" ", text).strip()


def test_clean_gives_empty_text_for_a_non_string() -> None:
    assert clean(None) == "" and clean(3) == ""
