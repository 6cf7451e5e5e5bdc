"""Typed ``run.json`` (the engine's manifest).

``run.json`` has one writer, the engine. Its ``config`` section is kept as an opaque JSON object here: what
it holds is the run spec's business (``rescue_bench.spec.record``), and it is compared key by key on resume.
The file's format is :data:`FORMAT`; one of another format is refused in one line (:func:`check_format`).

Run directories from before ``judging.json`` (:mod:`rescue_bench.rundir.judging`) held its facts in
``run.json`` (``judge_counts``, ``judge_prompt_hashes``, ``bertscore``); :func:`judging_of` reads either
layout.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rescue_bench.errors import ConfigError
from rescue_bench.records import Json
from rescue_bench.rundir.counts import Counts
from rescue_bench.rundir.judging import BertScoreSetting, JudgeCounts, Judging
from rescue_bench.rundir.lines import Line

FORMAT: Final = 2
"""The ``run.json`` format this version writes and reads: the whole spec under ``spec``."""


class DatasetInfo(BaseModel):
    """``run.json``'s ``dataset``: the source, its content hash and its sample counts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str | None = None
    hash: str | None = None
    samples: int | None = None
    couple: int | None = None
    family: int | None = None
    origin: str | None = None
    """For ``--data rescue``: where a copy that is not the official release came from (absent: official)."""


class Selection(BaseModel):
    """``run.json``'s ``selection``: the ``--data`` source and the sample ids asked for (``None``: all)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    data: str | None = None
    sample_ids: list[str] | None = None


class ModelIdentity(BaseModel):
    """The names in ``run.json``'s ``model``: a provider's identity (``provider``, ``model``, and keys of its
    own, such as ``base_url`` or ``sha256``), or ``name`` in older directories."""

    model_config = ConfigDict(extra="allow", frozen=True)  # each provider declares its own identity keys

    name: str | None = None
    provider: str | None = None
    model: str | None = None


class Perturbed(BaseModel):
    """What a perturbed run changed (``tasks.perturb.PerturbationRecord``, read here: names and seed)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    names: tuple[str, ...] = ()
    seed: int | None = None


class ConfigFacts(BaseModel):
    """The facts this leaf reads from ``config``; the rest is the run spec's (``rescue_bench.spec``)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    protocol: int = Field(default=1, strict=True)
    model: str | None = None
    seed: int | None = Field(default=None, strict=True)
    limit_samples: int | None = None
    perturbation: Perturbed | None = None


def _facts(config: dict[str, Json]) -> ConfigFacts:
    try:
        return ConfigFacts.model_validate(config)
    except ValidationError:  # a config of another shape names no candidate, no seed, no protocol
        return ConfigFacts()


PROTOCOL = 4
"""The version of the evaluation protocol a run follows (``run.json``'s ``config.protocol``): what the model
is asked, what the judges are shown and how answers are scored, and the shape of the config that records it.
Runs of two protocols are neither resumed as one run nor compared. 1: every run made before the field
existed; 2: the reference scripts' judge inputs, BERTScore backbone and VP pairing, the restored prompt rules,
and ITP's invalid answer as the wrong class in precision too (docs/protocol-differences.md); 3: the config
holds the generation settings not at their defaults, each under its own name (no default one is listed); 4:
the VP prompt offers people only as targets (``--vp-group-target`` adds the group) and the VP judge rubric is
lenient about "paraphrases and near-synonyms" again, as the reference's (CHANGELOG.md lists the prompt
hashes)."""


class Timings(BaseModel):
    """``run.json``'s ``timings``: when the run was created and last finished, its elapsed seconds over every
    session, and the phases of the last session (``setup_s``, ``requests_s``...)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    created: Json = None
    finished: Json = None
    elapsed_s: float | None = None
    sessions: int = 1
    session_elapsed_s: list[float] = Field(default_factory=list)
    """Each session's seconds; ``elapsed_s`` is their sum."""


class Manifest(Line):
    """``run.json``."""

    format: int = 1
    status: str = "running"
    config: dict[str, Json] = Field(default_factory=dict)
    spec: dict[str, Json] | None = None
    """The whole run spec (format 2), as ``RunSpec.model_dump``; the engine reads it back with
    ``RunSpec.model_validate`` (this leaf cannot import the spec, so it stays a JSON object here)."""
    options: dict[str, Json] = Field(default_factory=dict)
    package_version: str | None = None
    python: str | None = None
    git_commit: str | None = None
    dataset: DatasetInfo = DatasetInfo()
    selection: Selection = Selection()
    prompt_hashes: dict[str, str] = Field(default_factory=dict)
    batch_sizes: dict[str, int] = Field(default_factory=dict)
    model: Json = None
    """The provider's identity (no secrets); a plain name in some older directories."""
    generation: dict[str, Json] = Field(default_factory=dict)
    judges: list[str] = Field(default_factory=list)
    counts: dict[str, Counts] = Field(default_factory=dict)
    timings: Timings = Timings()
    stop_reason: str | None = None
    imported_from: dict[str, Json] | None = None
    """Set by ``rescue-bench import``: the harness and the logs the directory was made from."""
    perturbation: dict[str, Json] | None = None
    """``tasks.perturb.perturbation_record`` of a perturbed run (names, seed, invariants), else absent."""
    # The old layout: written by the judge pass before judging.json existed; read, never written.
    judge_counts: dict[str, JudgeCounts] | None = None
    judge_prompt_hashes: dict[str, str] | None = None
    bertscore: BertScoreSetting | None = None

    def to_json(self) -> dict[str, Json]:
        """The keys the file had (or the writer set), so a manifest reads back as it was written."""
        return self.model_dump(mode="json", exclude_unset=True)

    def with_status(self, status: str, stop_reason: str | None) -> Manifest:
        """The manifest with another status and its reason (the judge pass can leave a run unfinished).

        >>> Manifest(status="finished").with_status("incomplete", "judge pass: 2 verdicts").to_json()
        {'status': 'incomplete', 'stop_reason': 'judge pass: 2 verdicts'}
        """
        return self.model_copy(update={"status": status, "stop_reason": stop_reason})

    @field_validator("config")
    @classmethod
    def _protocol_is_a_version(cls, config: dict[str, Json]) -> dict[str, Json]:
        """``config.protocol`` is a whole number from 1 (``"3"`` or ``true`` is damage, not version 1)."""
        value = config.get("protocol", 1)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"config.protocol is {value!r}, not a protocol version (a whole number from 1)")
        return config

    @property
    def protocol(self) -> int:
        """The protocol version of the run (:data:`PROTOCOL`); 1 for a run recorded without one.

        >>> Manifest().protocol, Manifest(config={"protocol": 3}).protocol
        (1, 3)
        """
        return self.facts.protocol

    @property
    def facts(self) -> ConfigFacts:
        """What this leaf reads of ``config``: the protocol, the candidate, the seed, the selection, the
        perturbation."""
        return _facts(self.config)

    @property
    def perturbed(self) -> tuple[str, ...]:
        """The perturbations of the run, as given (none for a run of the data as it is).

        >>> Manifest(perturbation={"names": ["name-swap"], "seed": 0}).perturbed, Manifest().perturbed
        (('name-swap',), ())
        """
        try:
            return Perturbed.model_validate(self.perturbation or {}).names
        except ValidationError:
            return ()

    def protocol_note(self, where: object) -> str | None:
        """What a reader must know of the run's protocol: ``None`` for this version's; for a newer one, that
        this rescue-bench cannot read it (upgrade); for an older one, that its numbers follow older rules.

        >>> Manifest(config={"protocol": 999}).protocol_note("r").startswith("r was made by a newer")
        True
        >>> Manifest(config={"protocol": PROTOCOL}).protocol_note("r") is None
        True
        """
        if self.protocol > PROTOCOL:
            return (
                f"{where} was made by a newer rescue-bench (protocol version {self.protocol}; this one knows "
                f"up to {PROTOCOL}): upgrade rescue-bench (pip install -U rescue-bench) to read it"
            )
        if self.protocol < PROTOCOL:
            return (
                f"{where} follows protocol version {self.protocol}, older than this rescue-bench's "
                f"{PROTOCOL}: its prompts, judge inputs or scoring differ (docs/protocol-differences.md); "
                "compare it only with runs of its own version"
            )
        return None

    @property
    def candidate(self) -> str | None:
        """``provider/model`` of the run's candidate model.

        >>> Manifest(model={"provider": "openai", "model": "gpt-4o", "base_url": "x"}).candidate
        'openai/gpt-4o'
        >>> Manifest(model={"name": "baseline/random"}).candidate, Manifest().candidate
        ('baseline/random', None)
        """
        model, identity = self.model, self.identity
        if isinstance(model, str):
            return model
        if not isinstance(model, dict):
            return self.facts.model
        if identity is None:
            return None
        if identity.name is not None:
            return identity.name
        if identity.provider and identity.model:
            return f"{identity.provider}/{identity.model}"
        return None

    @property
    def identity(self) -> ModelIdentity | None:
        """The provider's identity in ``model``; ``None`` for a plain name, no model, or another shape."""
        if not isinstance(self.model, dict):
            return None
        try:
            return ModelIdentity.model_validate(self.model)
        except ValidationError:
            return None

    @property
    def seed(self) -> int | None:
        return self.facts.seed


def judging_of(judging: Judging | None, manifest: Manifest) -> Judging:
    """The run's judging record: ``judging.json``, else the keys an older judge pass left in ``run.json``.

    >>> old = Manifest(judges=["a/j"], judge_counts={"a/j": JudgeCounts(valid=3)}, judge_prompt_hashes={})
    >>> judging_of(None, old).counts["a/j"].valid, judging_of(None, Manifest()).judges
    (3, ())
    """
    if judging is not None:
        return judging
    if manifest.judge_counts is None and manifest.bertscore is None:
        return Judging()
    return Judging(
        judges=tuple(manifest.judges),
        counts=manifest.judge_counts or {},
        prompt_hashes=manifest.judge_prompt_hashes or {},
        bertscore=manifest.bertscore,
    )


def check_format(manifest: Mapping[str, Json], where: str) -> None:
    """Refuse, in one line naming its format and the version that wrote it, a ``run.json`` of another format.

    >>> check_format({"format": 3, "package_version": "0.9.0"}, "runs/a/run.json")
    Traceback (most recent call last):
    ...
    rescue_bench.errors.ConfigError: runs/a/run.json: format 3, written by rescue-bench 0.9.0; this \
rescue-bench reads format 2 only: start a new directory
    """
    found = manifest.get("format", 1)
    if found == FORMAT:
        return
    version = manifest.get("package_version")
    by = f"rescue-bench {version}" if isinstance(version, str) and version else "an unknown version"
    raise ConfigError(
        f"{where}: format {found}, written by {by}; "
        f"this rescue-bench reads format {FORMAT} only: start a new directory"
    )


def finish_manifest(
    manifest: Manifest,
    status: str,
    counts: Mapping[str, Counts],
    started: float,
    stop_reason: str | None,
    phases: Mapping[str, float] | None = None,
) -> Manifest:
    """``run.json`` at the end of a session: its status, counts and timings (elapsed time adds up over the
    sessions of a run; each session's share is kept)."""
    now = time.time()
    shares = [*manifest.timings.session_elapsed_s, round(now - started, 3)]
    timings = manifest.timings.model_copy(
        update={
            **(phases or {}),
            "finished": iso_time(now),
            "elapsed_s": round(sum(shares), 3),
            "session_elapsed_s": shares,
        }
    )
    update = {"status": status, "counts": dict(counts), "timings": timings, "stop_reason": stop_reason}
    return manifest.model_copy(update=update)


def git_commit() -> str | None:
    """The commit of the source checkout this package runs from; ``None`` for an installed package."""
    here = Path(__file__).resolve().parent
    if "site-packages" in here.parts:
        return None
    try:
        result = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = result.stdout.strip()
    return commit if result.returncode == 0 and len(commit) == 40 else None


def iso_time(timestamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(timestamp))
