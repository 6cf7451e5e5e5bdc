"""The pre-annotation rules a drafted row must follow, checked on the model's raw JSON rows.

The package's loader and validator run first (structure, labels in the taxonomy, intensities, evidence rows,
targets, mojibake); these rules add what a draft must also respect (paper section 4.5, in our words):

* **closed entity set**: speakers, targets and people are the on-screen participants, ``Therapist`` or the
  group label (``Couple`` / ``Family``); people (cue owners, emotion holders, viewpoint sources) are
  participants or the therapist. No empty names, no placeholders, no self-targets;
* the group label, where it is a target, is the only target;
* every key of the row schema is present (``[]`` or ``""`` when there is nothing: never null); no other keys;
* **subtitles are ground truth**: times stay inside the row's cue and the video; the speaker is the one the
  subtitles name; ``dialogue_cleaned`` has the subtitle's words (case, punctuation and bracketed sound notes
  aside);
* ``utterance_type``: one of the ten types on non-therapist rows, ``""`` on therapist rows;
* ``support_strategy``: therapist rows only, one main strategy, a label of the scenario's set, never a generic
  label (validation, perspective-taking, soothing, ...), never ``goal_align`` or ``detach`` for families, a
  stated content, no strategy on a bare backchannel ("Mm-hmm.").

On the four real release samples (181 human-verified rows) no content rule fires; only the row-schema
checks do (the release keeps the legacy ``relation_pattern*`` fields, null on 93 rows, and leaves
``relation_cycle_*`` out on 41-69 rows), plus the validator's own mojibake warning on one row.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from rescue_bench.annotate.rowfields import HOLDER_KEYS, MoveFields, RowFields
from rescue_bench.data.checks import check_sample
from rescue_bench.data.load import build_sample
from rescue_bench.data.schema import Row
from rescue_bench.taxonomy import (
    THERAPIST,
    UTTERANCE_TYPES,
    Scenario,
    canonical_form,
    group_label,
    normalize_label,
    strategy_labels,
)
from rescue_bench.workdir import ManifestRow

ROW_KEYS: tuple[str, ...] = (
    "row_index", "start_time", "end_time", "primary_speaker", "target", "dialogue_cleaned", "utterance_type",
    "background_dialogue", "tone_of_voice", "body_posture", "facial_expressions", "self_directed_behavior",
    "interaction_behavior", "internal_emotion", "viewpoints_attitudes", "support_strategy",
    "relation_cycle_state", "relation_cycle_reason", "relation_cycle_evidence_rows",
)  # fmt: skip
SPARSE_FIELDS = (
    "facial_expressions", "self_directed_behavior", "interaction_behavior", "internal_emotion",
    "viewpoints_attitudes", "support_strategy",
)  # fmt: skip
GENERIC_STRATEGIES = frozenset(
    {
        "validation", "validate", "validating", "perspective_taking", "soothing", "soothe", "support",
        "supportive", "empathy", "empathic", "reassurance", "normalization", "normalizing", "clarification",
        "exploration", "questioning",
    }
)  # fmt: skip
COUPLE_ONLY_STRATEGIES = frozenset({"goal_align", "detach"})
PLACEHOLDERS = frozenset(
    {"n/a", "na", "none", "null", "unknown", "placeholder", "tbd", "todo", "-", "?", "..."}
)
BACKCHANNELS = frozenset(
    {
        "mm",
        "mmm",
        "mhm",
        "mm-hmm",
        "mm-hm",
        "uh-huh",
        "hmm",
        "ok",
        "okay",
        "yeah",
        "yes",
        "right",
        "sure",
        "i see",
    }
)
TIME_TOLERANCE = 0.05
"""Seconds a row may reach past its cue (rounding in the model's numbers)."""

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_SOUND_NOTE = re.compile(r"\[[^\]]*\]|\([^)]*\)")


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule on one row (``row_index`` ``None``: the answer as a whole)."""

    row_index: int | None
    path: str
    message: str

    @property
    def text(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


@dataclass(frozen=True, slots=True)
class RuleContext:
    """What the rules check a segment's rows against."""

    scenario: Scenario
    participants: tuple[str, ...]
    rows: Mapping[int, ManifestRow]
    """All rows of the segment, by index: the subtitle ground truth."""
    video_duration: float | None = None

    @property
    def group(self) -> str:
        return group_label(self.scenario)

    @property
    def entities(self) -> frozenset[str]:
        return frozenset((*self.participants, THERAPIST, self.group))

    @property
    def people(self) -> frozenset[str]:
        return frozenset((*self.participants, THERAPIST))


def words(text: str) -> list[str]:
    """The words of ``text`` for comparison: lower case, curly apostrophes straightened, sound notes dropped.

    >>> words("[laughs] I DON’T know... (sighs) Fine!")
    ['i', "don't", 'know', 'fine']
    """
    return [w.replace("’", "'") for w in _WORD.findall(_SOUND_NOTE.sub(" ", text.lower()))]


_BACKCHANNEL_WORDS = frozenset(tuple(words(b)) for b in BACKCHANNELS)


def skeleton(row: ManifestRow) -> dict[str, Any]:
    """A release row holding only what the subtitles give (used where a draft row is missing or broken)."""
    out: dict[str, Any] = {"row_index": row.index, "start_time": row.start_time, "end_time": row.end_time}
    if row.speaker:
        out["primary_speaker"] = row.speaker
    out["dialogue_cleaned"] = row.text
    return out


def check_rows(rows: Mapping[int, Any], ctx: RuleContext) -> list[Violation]:
    """Every violation in ``rows`` (draft rows by index): the package's own checks, then the rules above.

    One message per field: where the validator and a rule flag the same field, the rule's (more specific)
    message is kept.
    """
    found: list[Violation] = []
    for index, raw in sorted(rows.items()):
        found.extend(_row_rules(index, raw, ctx))
    seen = {(v.row_index, v.path) for v in found}
    for violation in _package_checks(rows, ctx):
        if (violation.row_index, violation.path) not in seen:
            seen.add((violation.row_index, violation.path))
            found.append(violation)
    return sorted(found, key=lambda v: (v.row_index or 0, v.path))


# -- the package's loader and validator ----------------------------------------------------------------------


def _package_checks(rows: Mapping[int, Any], ctx: RuleContext) -> Iterator[Violation]:
    """Loader and validator problems of the checked rows, inside the whole segment (others as skeletons)."""
    full: list[dict[str, Any]] = []
    for index, manifest_row in sorted(ctx.rows.items()):
        raw = rows.get(index)
        if isinstance(raw, dict):
            try:
                Row.model_validate({**raw, "row_index": index})
            except ValidationError as exc:
                for err in exc.errors():
                    path = ".".join(str(p) if isinstance(p, str) else f"[{p}]" for p in err["loc"])
                    yield Violation(index, path.replace(".[", "["), f"{err['msg'].lower()}")
                raw = None
        full.append({**raw, "row_index": index} if isinstance(raw, dict) else skeleton(manifest_row))
    obj = {
        "sample_id": "draft",
        "scenario": ctx.scenario,
        "participants": list(ctx.participants),
        "rows": full,
    }
    sample, problems = build_sample(obj, fallback_id="draft", file=None, line=None)
    if sample is not None:
        problems = [*problems, *check_sample(sample, file=None, line=None)]
    for problem in problems:
        if problem.row_index in rows:
            path = re.sub(r"^rows\[\d+\]\.?", "", problem.path or "")
            yield Violation(problem.row_index, path, problem.message)


# -- the rules -----------------------------------------------------------------------------------------------


def _row_rules(index: int, raw: Any, ctx: RuleContext) -> Iterator[Violation]:
    if not isinstance(raw, dict):
        yield Violation(index, "", f"the row is a {type(raw).__name__}, not an object")
        return
    fields = RowFields.model_validate(raw)
    checks = (_keys, _timing, _speaker_and_words, _targets, _utterance, _items, _strategy)
    for check in checks:
        for path, message in check(raw, fields, index, ctx):
            yield Violation(index, path, message)


Found = Iterator[tuple[str, str]]


def _keys(raw: dict[str, Any], _row: RowFields, index: int, ctx: RuleContext) -> Found:
    for key in ROW_KEYS:
        if key not in raw:
            yield key, 'missing; give [] or "" when there is nothing to report'
    for key in raw:
        if key not in ROW_KEYS:
            yield key, "not a field of the row schema; remove it"
    yield from _nulls_and_placeholders(raw, "")


def _nulls_and_placeholders(value: Any, path: str) -> Found:
    if value is None:
        yield path, 'null is not allowed; use [] or ""'
    elif isinstance(value, str):
        if value.strip().casefold() in PLACEHOLDERS:
            yield path, f"placeholder {value!r}; leave the field empty instead"
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _nulls_and_placeholders(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _nulls_and_placeholders(item, f"{path}[{i}]")


def _timing(_raw: dict[str, Any], row: RowFields, index: int, ctx: RuleContext) -> Found:
    cue = ctx.rows.get(index)
    start, end = row.start_time, row.end_time
    if not isinstance(start, int | float) or not isinstance(end, int | float) or cue is None:
        return
    if end <= start:
        yield "end_time", f"{end} is not after start_time {start}"
    if start < cue.start_time - TIME_TOLERANCE or end > cue.end_time + TIME_TOLERANCE:
        yield (
            "start_time",
            (
                f"the row ({start}-{end} s) must stay inside its subtitle cue "
                f"({cue.start_time}-{cue.end_time} s)"
            ),
        )
    if ctx.video_duration is not None and end > ctx.video_duration + TIME_TOLERANCE:
        yield "end_time", f"{end} s is past the end of the video ({ctx.video_duration} s)"


def _speaker_and_words(_raw: dict[str, Any], row: RowFields, index: int, ctx: RuleContext) -> Found:
    cue = ctx.rows.get(index)
    speaker = row.primary_speaker
    if isinstance(speaker, str):
        if speaker not in ctx.entities:
            yield "primary_speaker", _outside(speaker, ctx.entities)
        elif cue is not None and cue.speaker and speaker != cue.speaker:
            yield "primary_speaker", f"{speaker!r}, but the subtitles name {cue.speaker!r}"
    text = row.dialogue_cleaned
    if isinstance(text, str) and cue is not None and words(text) != words(cue.text):
        yield "dialogue_cleaned", f"must keep the subtitle's words, without paraphrase: {cue.text!r}"


def _targets(_raw: dict[str, Any], row: RowFields, index: int, ctx: RuleContext) -> Found:
    targets = row.target
    if isinstance(targets, list):
        if not targets:
            yield (
                "target",
                "names nobody; give whom the row addresses (the group label only when truly collective)",
            )
        yield from _names(targets, "target", ctx, exclude=row.primary_speaker)


def _names(names: list[Any], path: str, ctx: RuleContext, exclude: Any = None) -> Found:
    """Entity names in a target list: in the closed set, not the holder itself, the group label alone."""
    for i, name in enumerate(names):
        if not isinstance(name, str) or not name.strip():
            yield f"{path}[{i}]", "an empty name"
        elif name not in ctx.entities:
            yield f"{path}[{i}]", _outside(name, ctx.entities)
        elif name == exclude:
            yield f"{path}[{i}]", f"{name!r} cannot target themselves"
    if ctx.group in names and len(names) > 1:
        yield path, f"{ctx.group!r} already means everyone; when it is a target it must be the only one"


def _utterance(_raw: dict[str, Any], row: RowFields, index: int, ctx: RuleContext) -> Found:
    kind, speaker = row.utterance_type, row.primary_speaker
    if not isinstance(kind, str):
        return
    if speaker == THERAPIST and kind.strip():
        yield "utterance_type", 'therapist rows have no utterance type; use ""'
    elif speaker != THERAPIST and kind.strip() not in UTTERANCE_TYPES:
        yield "utterance_type", f"{kind!r}: a non-therapist row needs one of {', '.join(UTTERANCE_TYPES)}"


_ITEM_FIELDS: dict[str, tuple[tuple[str, str], ...]] = {
    # field: ((key, kind), ...) with kind person | speaker | entity | entities | text | intensity
    "background_dialogue": (("speaker", "speaker"), ("target", "entities"), ("content", "text")),
    "body_posture": (("person", "person"), ("description", "text")),
    "facial_expressions": (("person", "person"), ("description", "text")),
    "self_directed_behavior": (("person", "person"), ("description", "text")),
    "interaction_behavior": (("initiator", "person"), ("target", "entities"), ("description", "text")),
    "internal_emotion": (("person", "person"), ("emotion_description", "text"), ("intensity", "intensity")),
    "viewpoints_attitudes": (("source", "person"), ("target", "entity"), ("viewpoint", "text")),
}


def _items(raw: dict[str, Any], _row: RowFields, index: int, ctx: RuleContext) -> Found:
    for name, spec in _ITEM_FIELDS.items():
        value = raw.get(name)
        if value is not None and not isinstance(value, list):
            yield name, f"must be a list (got {type(value).__name__})"
            continue
        for i, item in enumerate(value or ()):
            path = f"{name}[{i}]"
            if not isinstance(item, dict):
                yield path, "must be an object with " + ", ".join(key for key, _ in spec)
                continue
            holder = next((item[key] for key in HOLDER_KEYS if key in item), None)
            for key, kind in spec:
                yield from _item_value(item.get(key), f"{path}.{key}", kind, ctx, holder)


def _item_value(value: Any, path: str, kind: str, ctx: RuleContext, holder: Any) -> Found:
    if kind == "intensity":
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 10:
            yield path, f"must be an integer from 0 to 10 (got {value!r})"
    elif kind == "entities":
        if not isinstance(value, list) or not value:
            yield path, "needs at least one name"
        else:
            yield from _names(value, path, ctx, exclude=holder)
    elif not isinstance(value, str) or not value.strip():
        yield path, "must not be empty"
    elif kind == "person" and value not in ctx.people:
        yield path, _outside(value, ctx.people)
    elif kind in ("entity", "speaker") and value not in ctx.entities:
        yield path, _outside(value, ctx.entities)
    elif kind == "entity" and value == holder:
        yield path, "a viewpoint or address about oneself is not allowed"


def _strategy(_raw: dict[str, Any], row: RowFields, index: int, ctx: RuleContext) -> Found:
    moves = row.support_strategy
    if not isinstance(moves, list) or not moves:
        return
    if row.primary_speaker != THERAPIST:
        yield "support_strategy", "only therapist rows carry a support strategy"
        return
    if len(moves) > 1:
        yield "support_strategy", f"{len(moves)} entries; keep only the main function of the move"
    text = row.dialogue_cleaned
    if isinstance(text, str) and tuple(words(text)) in _BACKCHANNEL_WORDS:
        yield "support_strategy", f"{text!r} is a backchannel; leave support_strategy empty"
    for i, move in enumerate(moves):
        path = f"support_strategy[{i}]"
        if not isinstance(move, dict):
            yield path, "must be an object with provider, target, strategy_type, strategy_content"
            continue
        fields = MoveFields.model_validate(move)
        if fields.provider != THERAPIST:
            yield f"{path}.provider", f"must be {THERAPIST!r}"
        targets = fields.target
        if not isinstance(targets, list) or not targets:
            yield f"{path}.target", "needs whom the move addresses"
        else:
            yield from _names(targets, f"{path}.target", ctx, exclude=THERAPIST)
        yield from _strategy_label(fields.strategy_type, f"{path}.strategy_type", ctx.scenario)
        content = fields.strategy_content
        if not isinstance(content, str) or not content.strip():
            yield f"{path}.strategy_content", "say what the move does"


def _strategy_label(label: Any, path: str, scenario: Scenario) -> Found:
    """
    >>> list(_strategy_label("Validation", "s", "couple"))[0][1]
    "'Validation' is a generic label, not a strategy; name the move's main function from the couple set"
    >>> list(_strategy_label("goal_align", "s", "family"))[0][1]
    "'goal_align' is a couple strategy; the family set has no goal_align or detach"
    """
    if not isinstance(label, str) or not label.strip():
        yield path, "needs a label"
        return
    allowed = strategy_labels(scenario)
    if canonical_form(label) in GENERIC_STRATEGIES:
        yield (
            path,
            (
                f"{label!r} is a generic label, not a strategy; name the move's main function from the "
                f"{scenario} set"
            ),
        )
    elif (
        scenario == "family"
        and normalize_label(label, strategy_labels("couple")).label in COUPLE_ONLY_STRATEGIES
    ):
        yield path, f"{label!r} is a couple strategy; the family set has no goal_align or detach"
    elif label not in allowed:
        yield path, f"{label!r} is not a {scenario} strategy; use one of {', '.join(allowed)}"


def _outside(name: str, allowed: frozenset[str]) -> str:
    return f"{name!r} is outside the closed set ({', '.join(sorted(allowed))})"
