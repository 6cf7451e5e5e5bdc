"""Fictional, schema-valid RESCUE-Bench data at the paper's scale, for scale and performance work.

The generator matches the paper's Table 3 and App. E.2 in aggregate, not in content: 174 couple and 17
family samples per 191 (the same proportion for other sizes), about 37.06 rows per sample, therapist shares of
35.4% and 47.1%, three or (rarely) four family members, and relation-pattern and strategy frequencies close to
App. E.2.
Every annotation dimension is filled from small word lists; the text means nothing and is never real data.
Label sequences are sticky (a label tends to persist over rows), but transitions are not modelled on Figure 3.

The same ``seed`` and size always give the same file (only :class:`random.Random` is used).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rescue_bench.taxonomy import RELATION_PATTERNS, SCENARIOS, THERAPIST, Scenario, group_label


def _words(text: str, sep: str | None = None) -> tuple[str, ...]:
    return tuple(text.split(sep))


PAPER_SAMPLES = {"couple": 174, "family": 17}
PAPER_TURNS = {"couple": 5875, "family": 1204}
THERAPIST_SHARE = {"couple": 0.354, "family": 0.471}
SECONDS_PER_ROW = {"couple": 824.9 * 60 / 5875, "family": 239.9 * 60 / 1204}
# App. E.2: couple pursue_withdraw 38.7%, repair_softening 27.0%, mixed + withdraw_withdraw < 10%; family
# cooperative alliance 41.9% with five labels under 10%; the rest of each split is our guess.
RELATION_WEIGHTS: dict[Scenario, dict[str, float]] = {
    "couple": {
        "pursue_withdraw": 38.7,
        "repair_softening": 27.0,
        "attack_attack": 14.0,
        "constructive_alignment": 12.3,
        "withdraw_withdraw": 5.0,
        "mixed_transition": 3.0,
    },
    "family": {
        "cooperative_family_alliance": 41.9,
        "boundary_hierarchy_strain": 18.0,
        "cross_generational_coalition": 12.0,
        "escalation_conflict": 7.0,
        "pursue_withdraw": 6.0,
        "mutual_disengagement": 6.0,
        "repair_softening": 6.0,
        "mixed_transition": 3.1,
    },
}
# App. E.2: couple top 4 (reframe, evoke, track, goal_align) = 77.4%; family top 5 = 90.2%; repair, enact and
# safeguard are rare.
STRATEGY_WEIGHTS: dict[Scenario, dict[str, float]] = {
    "couple": {
        "reframe": 24.0,
        "evoke": 20.0,
        "track": 18.0,
        "goal_align": 15.4,
        "counterbalance": 7.0,
        "join": 5.0,
        "detach": 4.6,
        "repair": 2.5,
        "enact": 2.0,
        "safeguard": 1.5,
    },
    "family": {
        "reframe": 26.0,
        "join": 20.0,
        "counterbalance": 17.0,
        "track": 15.0,
        "boundary": 12.2,
        "enact": 4.0,
        "repair": 3.3,
        "safeguard": 2.5,
    },
}
UTTERANCE_WEIGHTS = {
    "disclosure": 30,
    "reflection": 12,
    "defense": 12,
    "accusation": 10,
    "validation": 8,
    "recollection": 8,
    "request": 6,
    "withdrawal": 5,
    "repair": 5,
    "other": 4,
}
# Shares of rows that carry labels, fitted to the paper's instance counts (Table 6): RPP 1,608 couple rows
# (therapist rows) and 525 family rows (any row); STP 1,290 + 347 therapist rows with a strategy.
LABELLED_THERAPIST_ROWS = 0.77
LABELLED_FAMILY_ROWS = 0.44
STRATEGY_ROWS = 0.62
STICKINESS = 0.8

NAMES = _words(
    "Ada Bram Cleo Dev Esme Finn Gus Hana Ivo Juno Kit Lior Mira Nico Odile Pim Quinn Rosa Sol Tove"
)
FEELINGS = _words("hurt unheard anxious frustrated ashamed hopeful lonely defensive relieved guarded tender")
TOPICS = _words("the chores|money|the weekend|their families|screen time|the move|trust|homework", sep="|")
TONES = ("calm, measured", "tense, clipped", "soft, hesitant", "raised, sharp", "flat, quiet", "warm, steady")
POSTURES = _words(
    "leans forward|sits back, arms folded|turns slightly away|sits upright|shifts in seat", sep="|"
)
FACES = ("furrowed brow", "tight lips", "eyes lowered", "brief smile", "steady gaze", "raised eyebrows")
SELF_DIRECTED = ("rubs hands together", "touches the neck", "plays with a ring", "sighs deeply")
GESTURES = ("looks directly at", "gestures towards", "glances at", "reaches a hand towards")
ATTITUDES = ("critical", "wary", "appreciative", "dismissive", "hopeful", "resentful")
OPENERS = {
    "disclosure": "Honestly, I feel {feeling} when we talk about {topic}.",
    "reflection": "I guess I keep coming back to {topic} because I feel {feeling}.",
    "defense": "That is not fair, I did my part with {topic}.",
    "accusation": "You never listen when I bring up {topic}.",
    "validation": "I can see why you feel {feeling} about {topic}.",
    "recollection": "Last month, with {topic}, I remember feeling {feeling}.",
    "request": "Could we try to sort out {topic} together?",
    "withdrawal": "I do not really want to talk about {topic}.",
    "repair": "I am sorry about {topic}, I know it left you {feeling}.",
    "other": "Hm. Maybe. About {topic}, I am not sure.",
}
THERAPIST_LINES = (
    "What happens inside you when {name} says that?",
    "Can you say that to {name} directly?",
    "So when one of you pushes, the other pulls back.",
    "What would you both like to change?",
    "It sounds like you are both {feeling} in different ways.",
    "Let us slow down for a moment.",
)


@dataclass(frozen=True, slots=True)
class SynthSummary:
    """What :func:`write_synthetic` wrote."""

    path: Path
    couple: int
    family: int
    rows: int
    therapist_rows: int

    def describe(self) -> str:
        share = self.therapist_rows / self.rows if self.rows else 0.0
        return (
            f"wrote {self.couple + self.family} samples ({self.couple} couple, {self.family} family), "
            f"{self.rows:,} rows ({share:.1%} therapist) to {self.path}"
        )


def scenario_split(samples: int) -> tuple[int, int]:
    """Couple and family counts in the paper's 174:17 proportion.

    >>> scenario_split(191), scenario_split(1910), scenario_split(10)
    ((174, 17), (1740, 170), (9, 1))
    """
    couple = round(samples * PAPER_SAMPLES["couple"] / sum(PAPER_SAMPLES.values()))
    return couple, samples - couple


def synthetic_samples(samples: int, seed: int = 0) -> Iterator[dict[str, Any]]:
    """Release-format sample objects (couples first, then families), deterministic for ``seed``.

    >>> first = next(synthetic_samples(3, seed=1))
    >>> first["scenario"], first["rows"][0]["row_index"]
    ('couple', 1)
    """
    rng = random.Random(seed)
    couple, family = scenario_split(samples)
    counts: dict[Scenario, int] = {"couple": couple, "family": family}
    plan: list[tuple[Scenario, int]] = []
    for scenario in SCENARIOS:
        mean = PAPER_TURNS[scenario] / PAPER_SAMPLES[scenario]
        plan += [(scenario, n) for n in _row_counts(rng, counts[scenario], mean)]
    numbers = dict.fromkeys(SCENARIOS, 0)
    decks = {scenario: _deck(rng, RELATION_WEIGHTS[scenario]) for scenario in SCENARIOS}
    for index, (scenario, rows) in enumerate(plan):
        numbers[scenario] += 1
        writer = _Writer(random.Random(f"{seed}:{index}"), scenario, numbers[scenario], decks[scenario])
        yield writer.sample(rows)


def _deck(rng: random.Random, weights: dict[str, float], size: int = 100) -> Iterator[str]:
    """Labels in exact proportion to ``weights``, shuffled, deck after deck.

    Drawing new segments' labels from decks rather than independently keeps the label frequencies of a small
    split (17 family samples) close to the weights.
    """
    total = sum(weights.values())
    cards = [label for label, w in weights.items() for _ in range(max(1, round(size * w / total)))]
    while True:
        rng.shuffle(cards)
        yield from cards


def write_synthetic(path: Path, *, samples: int, seed: int = 0) -> SynthSummary:
    """Write ``samples`` synthetic samples as release JSONL to ``path``."""
    counts = {"couple": 0, "family": 0}
    rows = therapist = 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for sample in synthetic_samples(samples, seed):
            counts[sample["scenario"]] += 1
            rows += len(sample["rows"])
            therapist += sum(row["primary_speaker"] == THERAPIST for row in sample["rows"])
            handle.write(json.dumps(sample, ensure_ascii=False) + "\n")
    return SynthSummary(path, counts["couple"], counts["family"], rows, therapist)


def _row_counts(rng: random.Random, count: int, mean: float) -> list[int]:
    """``count`` row counts around ``mean`` that add up to ``round(count * mean)`` exactly."""
    if count == 0:
        return []
    weights = [rng.uniform(0.5, 1.5) for _ in range(count)]
    total = round(count * mean)
    ideal = [total * w / sum(weights) for w in weights]
    counts = [int(x) for x in ideal]
    by_remainder = sorted(range(count), key=lambda i: ideal[i] - counts[i], reverse=True)
    for i in by_remainder[: total - sum(counts)]:
        counts[i] += 1
    return [max(n, 6) for n in counts]


class _Writer:
    """Builds one sample from its own ``rng`` and the shared deck of relation labels."""

    def __init__(self, rng: random.Random, scenario: Scenario, number: int, deck: Iterator[str]) -> None:
        self.rng = rng
        self.deck = deck
        self.scenario = scenario
        size = 2 if scenario == "couple" else (4 if rng.random() < 0.06 else 3)
        self.clients = rng.sample(NAMES, size)
        self.group = group_label(scenario)
        self.sample_id = (
            f"synthetic/couple_{number:04d}"
            if scenario == "couple"
            else f"family_therapy/synthetic_{number:03d}/merged"
        )
        self.strategies = list(STRATEGY_WEIGHTS[scenario])
        self.strategy_weights = list(STRATEGY_WEIGHTS[scenario].values())
        self.definitions = {label.key: label.definition for label in RELATION_PATTERNS[scenario]}

    def sample(self, n_rows: int) -> dict[str, Any]:
        speakers = self._speakers(n_rows)
        labels = self._relation_sequence(n_rows)
        rows: list[dict[str, Any]] = []
        clock = self.rng.uniform(0.0, 30.0)
        for index, speaker in enumerate(speakers, start=1):
            clock += self.rng.uniform(0.0, 0.3 * SECONDS_PER_ROW[self.scenario])
            length = self.rng.uniform(0.5, 1.2) * SECONDS_PER_ROW[self.scenario]
            row = self._therapist_row(speakers, index) if speaker == THERAPIST else self._client_row(speaker)
            rows.append(
                {
                    "row_index": index,
                    "start_time": round(clock, 2),
                    "end_time": round(clock + length, 2),
                    "primary_speaker": speaker,
                    **row,
                }
            )
            clock += length
        self._add_relations(rows, labels)
        return {
            "sample_id": self.sample_id,
            "scenario": self.scenario,
            "participants": list(self.clients),
            "source_file": f"data/synthetic/{self.sample_id}.json",
            "rows": rows,
        }

    def _speakers(self, n_rows: int) -> list[str]:
        therapist_rows = set(self.rng.sample(range(n_rows), round(THERAPIST_SHARE[self.scenario] * n_rows)))
        client_slots = [i for i in range(n_rows) if i not in therapist_rows]
        # Everyone speaks at least once, so "speakers per sample" is the family size plus the therapist.
        order = self.rng.sample(self.clients, len(self.clients))
        speakers = [THERAPIST] * n_rows
        previous = order[0]
        for k, slot in enumerate(client_slots):
            if k < len(order):
                previous = order[k]
            elif self.rng.random() > 0.35:
                previous = self.rng.choice([c for c in self.clients if c != previous])
            speakers[slot] = previous
        return speakers

    def _relation_sequence(self, n_rows: int) -> list[str]:
        labels: list[str] = []
        current = next(self.deck)
        for _ in range(n_rows):
            # Segments share one expected length, so the deck's proportions become the row frequencies.
            if self.rng.random() > STICKINESS:
                current = next(self.deck)
            labels.append(current)
        return labels

    def _client_row(self, speaker: str) -> dict[str, Any]:
        rng = self.rng
        kind = rng.choices(list(UTTERANCE_WEIGHTS), list(UTTERANCE_WEIGHTS.values()))[0]
        others = [c for c in self.clients if c != speaker]
        addressee = THERAPIST if rng.random() < 0.6 else rng.choice(others)
        feeling, topic = rng.choice(FEELINGS), rng.choice(TOPICS)
        looked_at = addressee if addressee != THERAPIST else rng.choice(others)
        row = self._common(speaker, [addressee], OPENERS[kind].format(feeling=feeling, topic=topic), kind)
        row["internal_emotion"] = [
            {
                "person": speaker,
                "emotion_description": f"feels {feeling} about {topic}",
                "intensity": rng.randint(2, 9),
            }
        ]
        row["interaction_behavior"] = [
            {
                "initiator": speaker,
                "target": [looked_at],
                "description": f"{rng.choice(GESTURES)} {looked_at}",
            }
        ]
        if rng.random() < 0.35:
            row["viewpoints_attitudes"] = [
                {
                    "source": speaker,
                    "target": looked_at,
                    "viewpoint": f"{looked_at} does not take {topic} seriously",
                    "attitude": rng.choice(ATTITUDES),
                }
            ]
        if rng.random() < 0.05:
            row["background_dialogue"] = [{"speaker": looked_at, "target": [speaker], "content": "Mm-hm."}]
        return row

    def _therapist_row(self, speakers: Sequence[str], index: int) -> dict[str, Any]:
        rng = self.rng
        recent = [s for s in speakers[max(0, index - 4) : index - 1] if s != THERAPIST]
        focus = recent[-1] if recent else rng.choice(self.clients)
        roll = rng.random()
        target = (
            [self.group]
            if roll < 0.15
            else rng.sample(self.clients, 2)
            if roll < 0.2 and len(self.clients) > 2
            else [focus]
        )
        line = rng.choice(THERAPIST_LINES).format(name=focus, feeling=rng.choice(FEELINGS))
        row = self._common(THERAPIST, target, line, "")
        if rng.random() < STRATEGY_ROWS:
            strategy = rng.choices(self.strategies, self.strategy_weights)[0]
            row["support_strategy"] = [
                {
                    "provider": THERAPIST,
                    "target": list(target),
                    "strategy_type": strategy,
                    "strategy_content": f"{strategy.replace('_', ' ')} with {', '.join(target)}",
                }
            ]
        return row

    def _common(self, speaker: str, target: list[str], text: str, utterance_type: str) -> dict[str, Any]:
        rng = self.rng
        return {
            "target": target,
            "dialogue_cleaned": text,
            "utterance_type": utterance_type,
            "background_dialogue": [],
            "tone_of_voice": rng.choice(TONES),
            "body_posture": [{"person": speaker, "description": rng.choice(POSTURES)}],
            "facial_expressions": [{"person": speaker, "description": rng.choice(FACES)}],
            "self_directed_behavior": (
                [{"person": speaker, "description": rng.choice(SELF_DIRECTED)}] if rng.random() < 0.2 else []
            ),
            "interaction_behavior": [],
            "internal_emotion": [],
            "viewpoints_attitudes": [],
            "support_strategy": [],
        }

    def _add_relations(self, rows: list[dict[str, Any]], labels: list[str]) -> None:
        """Couples: labels on therapist rows, echoed on the client row before (as in the release); families:
        ``relation_cycle_state`` on every row, about half of them labelled."""
        for position, (row, label) in enumerate(zip(rows, labels, strict=True)):
            is_therapist = row["primary_speaker"] == THERAPIST
            if self.scenario == "couple" and not is_therapist:
                row.update(
                    relation_pattern=None, relation_pattern_reason=None, relation_pattern_evidence_rows=[]
                )
                continue
            share = LABELLED_THERAPIST_ROWS if self.scenario == "couple" else LABELLED_FAMILY_ROWS
            value = label if self.rng.random() < share else ""
            row["relation_cycle_state"] = value
            row["relation_cycle_reason"] = f"{self.definitions[value]}" if value else ""
            row["relation_cycle_evidence_rows"] = self._evidence(row["row_index"]) if value else []
            row.update(relation_pattern=None, relation_pattern_reason=None, relation_pattern_evidence_rows=[])
            before = rows[position - 1] if position else None
            if value and before is not None and before["primary_speaker"] != THERAPIST:
                before.update(
                    relation_pattern=value,
                    relation_pattern_reason=row["relation_cycle_reason"],
                    relation_pattern_evidence_rows=list(row["relation_cycle_evidence_rows"]),
                )

    def _evidence(self, row_index: int) -> list[int]:
        window = range(max(1, row_index - 4), row_index + 1)
        return sorted(self.rng.sample(window, min(len(window), self.rng.randint(1, 3))))
