"""What data a run was made on, as the exports describe it: the official release only when it was.

A run counts as one on the official release when its ``--data`` was the release's Hugging Face dataset
(``hf`` or ``hf:tomhu/relation_therapy``) or the authors' file that ``rescue-bench data get`` checked
(``rescue``), and it selected no subset of it (no ``--limit-samples``, no sample ids). Anything else (the
fictional demo data, a local file, another Hub dataset, a subset) is described as what it is, and the exports
never name the release as its dataset.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

from rescue_bench.data.load import DEFAULT_HF_REPO
from rescue_bench.data.release import GITHUB_BASE, GITHUB_COMMIT, GITHUB_REPO, RELEASE_PATH, github_url
from rescue_bench.data.sources import RELEASE
from rescue_bench.rundir import Manifest


@dataclass(frozen=True, slots=True)
class DataUsed:
    official: bool
    """The whole official release."""
    hf_repo: str | None
    """The Hub dataset the data came from, if it did."""
    description: str
    """One phrase for cards and records, e.g. ``the fictional demo data shipped with rescue-bench (6
    conversations)``."""
    url: str | None = None
    """Where the release file came from, for the official file fetched by ``data get``."""


def data_used(manifest: Manifest) -> DataUsed:
    """How ``run.json`` says the run's data should be described.

    >>> data_used(Manifest(selection={"data": "demo"}, dataset={"samples": 6})).description
    'the fictional demo data shipped with rescue-bench (6 conversations), not the RESCUE-Bench release'
    >>> data_used(Manifest(selection={"data": "hf"}, dataset={"samples": 191})).official
    True
    >>> data_used(Manifest(selection={"data": "rescue"}, dataset={"samples": 191})).url.startswith("https://")
    True
    """
    source = manifest.selection.data or manifest.dataset.source or "unknown"
    size = manifest.dataset.samples
    count = f" ({size} conversations)" if size is not None else ""
    subset = manifest.selection.sample_ids is not None or manifest.facts.limit_samples is not None
    if source == "hf" or source.startswith("hf:"):
        repo = source.partition(":")[2] or DEFAULT_HF_REPO
        if repo == DEFAULT_HF_REPO and not subset:
            return DataUsed(True, repo, f"the RESCUE-Bench release, {repo} on the Hugging Face Hub{count}")
        part = "a subset of " if subset else ""
        note = "" if repo == DEFAULT_HF_REPO else ", not the RESCUE-Bench release"
        return DataUsed(False, repo, f"{part}the Hugging Face dataset {repo}{count}{note}")
    if source == RELEASE and manifest.dataset.origin is not None:
        what = f"a copy of the RESCUE-Bench release file from {manifest.dataset.origin}"
        return DataUsed(False, None, f"{what}{count}, not verified as the official release")
    if source == RELEASE:
        if not subset:
            where = f"the RESCUE-Bench release, {GITHUB_REPO} {RELEASE_PATH} at {GITHUB_COMMIT[:12]}{count}"
            return DataUsed(True, None, where, url=github_url(GITHUB_BASE))
        return DataUsed(False, None, f"a subset of the RESCUE-Bench release{count}, not the whole release")
    if source == "demo":
        what = "the fictional demo data shipped with rescue-bench"
    else:
        what = f"the local data file {PurePath(source).name}"
    return DataUsed(False, None, f"{what}{count}, not the RESCUE-Bench release")
