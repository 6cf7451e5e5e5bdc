from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.annotate.workdirs import LINES, context, good_row, without_note

from rescue_bench.annotate.rules import RuleContext, check_rows, words
from rescue_bench.workdir import ManifestRow


def rows(**changed: dict[str, Any]) -> dict[int, Any]:
    out: dict[int, Any] = {i: without_note(good_row(i)) for i in range(1, len(LINES) + 1)}
    for key, row in changed.items():
        out[int(key.removeprefix("r"))] = row
    return out


def test_good_rows_break_no_rule() -> None:
    assert check_rows(rows(), context()) == []


def edit(index: int, change: Callable[[dict[str, Any]], None]) -> dict[int, Any]:
    row = without_note(good_row(index))
    change(row)
    return rows(**{f"r{index}": row})


def _set(**values: Any) -> Callable[[dict[str, Any]], None]:
    return lambda row: row.update(values)


def _strategy(**values: Any) -> Callable[[dict[str, Any]], None]:
    return lambda row: row["support_strategy"][0].update(values)


CASES: list[tuple[str, int, Callable[[dict[str, Any]], None], str, str]] = [
    # (case, row, change, path, message fragment)
    ("entity set", 2, _set(target=["Dr. Reed"]), "target[0]", "'Dr. Reed' is outside the closed set"),
    ("self target", 2, _set(target=["Nora"]), "target[0]", "'Nora' cannot target themselves"),
    ("group not alone", 1, _set(target=["Couple", "Nora"]), "target", "it must be the only one"),
    ("no target", 2, _set(target=[]), "target", "names nobody"),
    ("missing key", 2, lambda r: r.pop("internal_emotion"), "internal_emotion", "missing; give []"),
    ("extra key", 2, _set(confidence=0.9), "confidence", "not a field of the row schema"),
    ("null", 2, _set(tone_of_voice=None), "tone_of_voice", "null is not allowed"),
    ("placeholder", 2, _set(tone_of_voice="N/A"), "tone_of_voice", "placeholder 'N/A'"),
    ("outside cue", 2, _set(end_time=5.0), "start_time", "must stay inside its subtitle cue (2.0-4.25 s)"),
    ("past video end", 5, _set(end_time=9.5), "end_time", "past the end of the video (9.0 s)"),
    ("subtitle speaker", 2, _set(primary_speaker="Eli", target=["Nora"]), "primary_speaker",
     "subtitles name 'Nora'"),
    ("paraphrase", 2, _set(dialogue_cleaned="He never plans things."), "dialogue_cleaned",
     "subtitle's words"),
    ("therapist type", 1, _set(utterance_type="reflection"), "utterance_type",
     "therapist rows have no utterance"),
    ("client type", 2, _set(utterance_type=""), "utterance_type", "a non-therapist row needs one of"),
    ("client strategy", 2, _set(support_strategy=good_row(4)["support_strategy"]), "support_strategy",
     "only therapist rows"),
    ("two strategies", 4, lambda r: r["support_strategy"].append(dict(r["support_strategy"][0])),
     "support_strategy", "2 entries; keep only the main function"),
    ("generic label", 4, _strategy(strategy_type="validation"), "support_strategy[0].strategy_type",
     "'validation' is a generic label"),
    ("unknown label", 4, _strategy(strategy_type="boundary"), "support_strategy[0].strategy_type",
     "'boundary' is not a couple strategy"),
    ("strategy target", 4, _strategy(target=["Therapist"]), "support_strategy[0].target[0]",
     "cannot target themselves"),
    ("no content", 4, _strategy(strategy_content=" "), "support_strategy[0].strategy_content", "say what"),
    ("provider", 4, _strategy(provider="Nora"), "support_strategy[0].provider", "must be 'Therapist'"),
    ("backchannel", 4, _set(dialogue_cleaned="Mm-hmm."), "support_strategy", "is a backchannel"),
    ("person set", 2, lambda r: r["facial_expressions"][0].update(person="Couple"),
     "facial_expressions[0].person", "'Couple' is outside the closed set"),
    ("empty description", 2, lambda r: r["facial_expressions"][0].update(description=""),
     "facial_expressions[0].description", "must not be empty"),
    ("self viewpoint", 2, lambda r: r["viewpoints_attitudes"][0].update(target="Nora"),
     "viewpoints_attitudes[0].target", "about oneself"),
    ("intensity", 2, lambda r: r["internal_emotion"][0].update(intensity=11), "internal_emotion[0].intensity",
     "integer from 0 to 10"),
    ("interaction target", 2, lambda r: r["interaction_behavior"][0].update(target=[]),
     "interaction_behavior[0].target", "at least one name"),
    ("relation label (validator)", 2, _set(relation_cycle_state="stonewalling"), "relation_cycle_state",
     "'stonewalling' is not a couple relation pattern"),
    ("evidence range (validator)", 2, _set(relation_cycle_evidence_rows=[9]),
     "relation_cycle_evidence_rows[0]", "out of range"),
    ("not a list", 2, _set(body_posture=42), "body_posture", "must be a list (got int)"),
    ("unloadable (loader)", 2, _set(start_time="soon"), "start_time", "valid number"),
    ("not an object", 2, lambda r: r.clear(), "row_index", "missing"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "index", "change", "path", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_each_rule_flags_its_field(
    case: str, index: int, change: Callable[[dict[str, Any]], None], path: str, fragment: str
) -> None:
    found = check_rows(edit(index, change), context())
    assert found, case
    assert {v.row_index for v in found} == {index}
    assert any(v.path == path and fragment in v.message for v in found), [v.text for v in found]


def test_family_has_no_goal_align_or_detach_and_one_message_per_field() -> None:
    ctx = RuleContext("family", ("Nora", "Eli", "Ana"), context().rows, None)
    row = without_note(good_row(4))
    row["support_strategy"][0]["strategy_type"] = "goal_align"
    found = [v for v in check_rows({4: row}, ctx) if v.path == "support_strategy[0].strategy_type"]
    # the validator would also say "not a family strategy": the rule's more specific message wins
    assert [v.message for v in found] == [
        "'goal_align' is a couple strategy; the family set has no goal_align or detach"
    ]


def test_words_ignore_case_punctuation_and_sound_notes() -> None:
    assert words("[laughs] I don’t KNOW... (sighs)") == words("i don't know")
    assert words("I do not know") != words("I don't know")


def test_rows_without_a_subtitle_speaker_accept_any_known_speaker() -> None:
    ctx = RuleContext("couple", ("Nora", "Eli"), {1: ManifestRow(1, 0.0, 1.0, None, "Fine.")}, None)
    row = {**without_note(good_row(3)), "row_index": 1, "start_time": 0.0, "end_time": 1.0}
    row.update(dialogue_cleaned="Fine.", relation_cycle_evidence_rows=[1])
    assert check_rows({1: row}, ctx) == []


def test_real_release_rows_only_differ_in_schema_keys(real_subset: Path) -> None:
    """The human-verified rows break none of the content rules; only keys of the legacy schema differ."""
    schema_only = (
        "not a field of the row schema",
        "missing; give",
        "null is not allowed",
        "suspected mojibake",
    )
    for line in real_subset.read_text(encoding="utf-8").splitlines():
        sample = json.loads(line)
        by_index = {r["row_index"]: r for r in sample["rows"]}
        truth = {
            i: ManifestRow(i, r["start_time"], r["end_time"], r["primary_speaker"], r["dialogue_cleaned"])
            for i, r in by_index.items()
        }
        ctx = RuleContext(sample["scenario"], tuple(sample["participants"]), truth, None)
        other = [v.text for v in check_rows(by_index, ctx) if not v.message.startswith(schema_only)]
        assert other == [], sample["sample_id"]
