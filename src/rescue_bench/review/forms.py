"""The row editor: which fields it shows, and the pure mapping between a release-format row and its form.

``state_from_row`` turns a stored row into form values, ``state_from_form`` reads a posted form, and
``row_from_state`` applies the form to the row it was rendered from. Anything the editor does not show (times,
background dialogue, unknown keys, unknown keys inside entries) is carried over untouched, and a value the
annotator did not change keeps its exact stored form (``null`` vs ``""`` vs absent, ``"7"`` vs ``7``), so a
save without changes changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from rescue_bench.data.schema import Row, parse_intensity
from rescue_bench.taxonomy import (
    RELATION_PATTERNS,
    STRATEGIES,
    THERAPIST,
    UTTERANCE_TYPES,
    Scenario,
    group_label,
)

Value = str | tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FieldSpec:
    key: str
    label: str
    kind: str
    """``text``, ``longtext``, ``intensity``, or a choice kind: ``person``, ``speaker``, ``addressee``,
    ``utterance``, ``relation``, ``strategy``."""
    multi: bool = False


@dataclass(frozen=True, slots=True)
class ListSpec:
    key: str
    label: str
    fields: tuple[FieldSpec, ...]


_CUE = (FieldSpec("person", "Person", "person"), FieldSpec("description", "Description", "text"))
SCALARS = (
    FieldSpec("primary_speaker", "Speaker", "speaker"),
    FieldSpec("target", "Target", "addressee", multi=True),
    FieldSpec("dialogue_cleaned", "Dialogue", "longtext"),
    FieldSpec("utterance_type", "Utterance type", "utterance"),
    FieldSpec("tone_of_voice", "Tone of voice", "text"),
)
LISTS = (
    ListSpec("body_posture", "Body posture", _CUE),
    ListSpec("facial_expressions", "Facial expressions", _CUE),
    ListSpec("self_directed_behavior", "Self-directed behaviour", _CUE),
    ListSpec(
        "interaction_behavior",
        "Interaction behaviour",
        (
            FieldSpec("initiator", "Initiator", "person"),
            FieldSpec("target", "Target", "person", multi=True),
            FieldSpec("description", "Description", "text"),
        ),
    ),
    ListSpec(
        "internal_emotion",
        "Internal emotion",
        (
            FieldSpec("person", "Person", "person"),
            FieldSpec("emotion_description", "Emotion", "text"),
            FieldSpec("intensity", "Intensity (0-10)", "intensity"),
        ),
    ),
    ListSpec(
        "viewpoints_attitudes",
        "Viewpoints",
        (
            FieldSpec("source", "Source", "person"),
            FieldSpec("target", "Target", "addressee"),
            FieldSpec("viewpoint", "Viewpoint", "longtext"),
            FieldSpec("attitude", "Attitude", "text"),
        ),
    ),
    ListSpec(
        "support_strategy",
        "Therapist strategy",
        (
            FieldSpec("provider", "Provider", "speaker"),
            FieldSpec("target", "Target", "addressee", multi=True),
            FieldSpec("strategy_type", "Strategy", "strategy"),
            FieldSpec("strategy_content", "Intention", "longtext"),
        ),
    ),
)
LIST_KEYS = tuple(spec.key for spec in LISTS)
RELATION_FIELDS = ("label", "reason", "evidence")
"""The fields of :class:`Relation`, in order; the editor names them ``rel-<field>``."""


@dataclass(frozen=True)
class Entry:
    src: int | None
    """Position of the entry in the row the form was rendered from (``None`` for a new entry)."""
    values: dict[str, Value]


@dataclass(frozen=True, slots=True)
class Relation:
    """The relation-pattern fields of the editor (``rel-label``, ``rel-reason``, ``rel-evidence``)."""

    label: str = ""
    reason: str = ""
    evidence: str = ""
    """Row numbers as typed, e.g. ``"3, 4, 6"``."""


@dataclass(frozen=True)
class FormState:
    scalars: dict[str, Value]
    lists: dict[str, tuple[Entry, ...]]
    relation: Relation = field(default_factory=Relation)


def relation_keys(row: Container[str]) -> tuple[str, str, str]:
    """The row's relation-pattern fields: ``relation_cycle_*`` unless only ``relation_pattern`` is present.

    >>> relation_keys({"relation_pattern": "attack_attack"})
    ('relation_pattern', 'relation_pattern_reason', 'relation_pattern_evidence_rows')
    """
    base = (
        "relation_pattern"
        if "relation_pattern" in row and "relation_cycle_state" not in row
        else "relation_cycle"
    )
    label = "relation_pattern" if base == "relation_pattern" else "relation_cycle_state"
    return label, f"{base}_reason", f"{base}_evidence_rows"


def as_scenario(value: str) -> Scenario:
    """A stored scenario string as the taxonomy's type (the loader only stores the two valid values)."""
    return "family" if value == "family" else "couple"


def choices(scenario: Scenario, participants: Sequence[str]) -> dict[str, list[tuple[str, str]]]:
    """The options of each choice kind as ``(value, label)`` pairs, from the scenario's taxonomy."""
    people = [(p, p) for p in participants]
    therapist = [(THERAPIST, THERAPIST)]
    group = group_label(scenario)
    return {
        "person": people + therapist,
        "speaker": people + therapist + [(group, group)],
        "addressee": people + therapist + [(group, group)],
        "utterance": [(u, u) for u in UTTERANCE_TYPES],
        "relation": [(lab.key, f"{lab.key}: {lab.name}") for lab in RELATION_PATTERNS[scenario]],
        "strategy": [(lab.key, f"{lab.key}: {lab.name}") for lab in STRATEGIES[scenario]],
    }


# -- row -> form ---------------------------------------------------------------------------------------------


def shown(value: Any) -> str:
    """A stored scalar as form text.

    >>> shown(None), shown(7.0), shown(6.5), shown(" calm ")
    ('', '7', '6.5', 'calm')
    """
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def names(value: Any) -> tuple[str, ...]:
    """A stored target (list, string or null) as a tuple of names.

    >>> names(["Alan", " Beth "]), names("Alan"), names(None)
    (('Alan', 'Beth'), ('Alan',), ())
    """
    items = [value] if isinstance(value, str) else value if isinstance(value, list | tuple) else []
    return tuple(s.strip() for s in items if isinstance(s, str) and s.strip())


def _entry_dict(entry: Any) -> dict[str, Any]:
    return entry if isinstance(entry, dict) else {"description": entry} if isinstance(entry, str) else {}


def _entry_values(spec: ListSpec, entry: Any) -> dict[str, Value]:
    raw = _entry_dict(entry)
    return {f.key: names(raw.get(f.key)) if f.multi else shown(raw.get(f.key)) for f in spec.fields}


def state_from_row(row: Mapping[str, Any]) -> FormState:
    scalars = {f.key: names(row.get(f.key)) if f.multi else shown(row.get(f.key)) for f in SCALARS}
    lists = {
        spec.key: tuple(Entry(i, _entry_values(spec, e)) for i, e in enumerate(_as_list(row.get(spec.key))))
        for spec in LISTS
    }
    label, reason, evidence = relation_keys(row)
    relation = Relation(
        label=shown(row.get(label)),
        reason=shown(row.get(reason)),
        evidence=", ".join(shown(v) for v in _as_list(row.get(evidence))),
    )
    return FormState(scalars, lists, relation)


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


def with_blank(state: FormState, list_key: str) -> FormState:
    """The state with one empty entry added to ``list_key``."""
    spec = next(s for s in LISTS if s.key == list_key)
    blank = Entry(None, {f.key: () if f.multi else "" for f in spec.fields})
    return FormState(
        state.scalars, {**state.lists, list_key: (*state.lists[list_key], blank)}, state.relation
    )


def without(state: FormState, list_key: str, position: int) -> FormState:
    """The state with entry ``position`` of ``list_key`` removed."""
    entries = tuple(e for i, e in enumerate(state.lists[list_key]) if i != position)
    return FormState(state.scalars, {**state.lists, list_key: entries}, state.relation)


# -- form -> state -------------------------------------------------------------------------------------------

_ENTRY_KEY = re.compile(r"^(?P<list>[a-z_]+)-(?P<i>[0-9]{1,4})-src$")


def state_from_form(form: Mapping[str, Sequence[str]]) -> FormState:
    """Read the posted editor (``form`` maps each name to all its values)."""

    def one(name: str) -> str:
        values = form.get(name) or [""]
        return values[0].strip()

    def many(name: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(v.strip() for v in form.get(name, []) if v.strip()))

    scalars = {f.key: many(f"f-{f.key}") if f.multi else one(f"f-{f.key}") for f in SCALARS}
    positions: dict[str, list[int]] = {spec.key: [] for spec in LISTS}
    for name in form:
        match = _ENTRY_KEY.match(name)
        if match and match["list"] in positions:
            positions[match["list"]].append(int(match["i"]))
    lists = {}
    for spec in LISTS:
        entries = []
        for i in sorted(positions[spec.key]):
            prefix = f"{spec.key}-{i}-"
            values = {f.key: many(prefix + f.key) if f.multi else one(prefix + f.key) for f in spec.fields}
            src = one(prefix + "src")
            entries.append(Entry(int(src) if _is_number(src) else None, values))
        lists[spec.key] = tuple(entries)
    relation = Relation(*(one(f"rel-{name}") for name in RELATION_FIELDS))
    return FormState(scalars, lists, relation)


# -- state -> row --------------------------------------------------------------------------------------------


def row_from_state(
    state: FormState, base: Mapping[str, Any], scenario: Scenario, participants: Sequence[str]
) -> tuple[dict[str, Any], list[str]]:
    """Apply the form to ``base`` (the row it was rendered from); return the new row and any errors."""
    options = {kind: {value for value, _ in pairs} for kind, pairs in choices(scenario, participants).items()}
    errors: list[str] = []
    new = dict(base)
    for spec in SCALARS:
        old = names(base.get(spec.key)) if spec.multi else shown(base.get(spec.key))
        value = state.scalars.get(spec.key, () if spec.multi else "")
        if value != old:
            errors += _check(spec, value, options, spec.label)
            new[spec.key] = list(value) if spec.multi else (value or None)
    for list_spec in LISTS:
        entries = _apply_list(
            list_spec, state.lists.get(list_spec.key, ()), _as_list(base.get(list_spec.key)), options, errors
        )
        if entries is not None:
            new[list_spec.key] = entries
    _apply_relation(state.relation, base, new, options["relation"], errors)
    if not errors:
        try:
            Row.model_validate(new)
        except ValidationError as exc:
            errors += [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
    return new, errors


def _is_number(text: str) -> bool:
    """A plain whole number that ``int`` reads: ASCII digits only (``str.isdigit`` also accepts ``'¹'``), and
    short (``int`` refuses more than 4,300 digits).

    >>> _is_number("12"), _is_number("\u00b9"), _is_number("9" * 5000), _is_number("")
    (True, False, False, False)
    """
    return 0 < len(text) <= 9 and text.isascii() and text.isdigit()


def _check(spec: FieldSpec, value: Value, options: dict[str, set[str]], where: str) -> list[str]:
    if spec.kind == "intensity":
        ok = value == "" or (
            isinstance(value, str) and _is_number(value) and parse_intensity(value) is not None
        )
        return [] if ok else [f"{where}: intensity must be a whole number from 0 to 10 (got {value!r})"]
    allowed = options.get(spec.kind)
    if allowed is None:
        return []
    bad = [v for v in ((value,) if isinstance(value, str) else value) if v and v not in allowed]
    return [f"{where}: {v!r} is not one of the allowed values" for v in bad]


def _apply_list(
    spec: ListSpec, entries: Sequence[Entry], base: list[Any], options: dict[str, set[str]], errors: list[str]
) -> list[Any] | None:
    """The new list, or ``None`` when it equals the stored one (which is then kept exactly as stored)."""
    out: list[Any] = []
    for number, entry in enumerate(entries, start=1):
        if all(not v for v in entry.values.values()):
            continue  # an empty entry is no entry: this is how a blank slot stays unused
        stored = base[entry.src] if entry.src is not None and entry.src < len(base) else None
        if stored is not None and _entry_values(spec, stored) == entry.values:
            out.append(stored)
            continue
        raw = dict(_entry_dict(stored))
        for f in spec.fields:
            value = entry.values.get(f.key, () if f.multi else "")
            old = names(raw.get(f.key)) if f.multi else shown(raw.get(f.key))
            if value == old:
                continue
            errors += _check(f, value, options, f"{spec.label} {number}, {f.label.lower()}")
            raw[f.key] = list(value) if f.multi else _typed(f, value)
        out.append(raw)
    return None if out == base or (not out and not base) else out


def _typed(spec: FieldSpec, value: Value) -> Any:
    if spec.kind == "intensity" and isinstance(value, str) and _is_number(value):
        return int(value)
    return value or None


def _apply_relation(
    relation: Relation,
    base: Mapping[str, Any],
    new: dict[str, Any],
    allowed: set[str],
    errors: list[str],
) -> None:
    label_key, reason_key, evidence_key = relation_keys(base)
    old = state_from_row(base).relation
    label, reason, evidence = relation.label, relation.reason, relation.evidence
    if label != old.label:
        if label and label not in allowed:
            errors.append(f"Relation pattern: {label!r} is not a label of this scenario")
        new[label_key] = label or None
    if reason != old.reason:
        new[reason_key] = reason or None
    if evidence != old.evidence:
        tokens = [t for t in re.split(r"[\s,;]+", evidence) if t]
        if not all(_is_number(t) for t in tokens):
            errors.append(f"Relation evidence rows: give row numbers separated by commas (got {evidence!r})")
        else:
            new[evidence_key] = [int(t) for t in tokens]


# -- diffs for history and conflicts -------------------------------------------------------------------------


def changed_fields(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> list[str]:
    """Top-level keys whose values differ, in the order of ``after`` then ``before``.

    >>> changed_fields({"a": 1, "b": 2}, {"a": 1, "b": 3, "c": 4})
    ['b', 'c']
    """
    before = before or {}
    keys = list(dict.fromkeys([*after, *before]))
    return [k for k in keys if before.get(k) != after.get(k)]
