"""Where the official release lives once downloaded, what it must hold, and the Hugging Face snapshot.

``rescue-bench data get`` (:mod:`rescue_bench.data.fetch`) puts the authors' ``data/benchmark_191.jsonl`` in
the user cache (``$RESCUE_BENCH_CACHE_DIR/data`` or the platform's cache directory), beside a record of where
it came from and its SHA-256. ``--data rescue`` reads it from there through :func:`installed_release`, which
refuses a file that is missing or no longer matches its record. The file is only ever put in place whole (a
temporary file, then a rename), so a download that was cut off is never read.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Final, Literal

import platformdirs

from rescue_bench.errors import DataError
from rescue_bench.quiet import hf_progress_off

GITHUB_REPO: Final = "Tomsawyerhu/RESCUE-bench"
GITHUB_COMMIT: Final = "0d0b0793e23157c7af76d1d301e63fc705b27f2a"
"""The release commit: the data file at this commit is the one the paper reports on."""
RELEASE_PATH: Final = "data/benchmark_191.jsonl"
GITHUB_BASE: Final = "https://raw.githubusercontent.com"
GITHUB_BASE_ENV: Final = "RESCUE_BENCH_GITHUB_URL"
"""Overrides :data:`GITHUB_BASE` (a mirror, or a local server in the tests)."""
HF_REPO: Final = "tomhu/relation_therapy"
HF_ENDPOINT_ENV: Final = "RESCUE_BENCH_HF_ENDPOINT"
"""Overrides the Hugging Face endpoint for this package only (``HF_ENDPOINT`` works too, for every tool)."""
CACHE_ENV: Final = "RESCUE_BENCH_CACHE_DIR"

Source = Literal["github", "hf"]
SOURCES: Final[tuple[Source, ...]] = ("github", "hf")


@dataclass(frozen=True, slots=True)
class Counts:
    """What the release holds: samples per scenario and rows."""

    samples: int
    couple: int
    family: int
    rows: int

    def describe(self) -> str:
        return f"{self.samples} samples ({self.couple} couple, {self.family} family), {self.rows:,} rows"


EXPECTED: Final = Counts(samples=191, couple=174, family=17, rows=7079)
"""The paper's Table 3 counts, which the official file matches."""


@dataclass(frozen=True, slots=True)
class ReleaseRecord:
    """Where the installed release came from, and what was checked when it was installed."""

    source: Source
    url: str
    sha256: str
    size: int
    counts: Counts

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: object) -> ReleaseRecord:
        """Raises ``ValueError`` (and ``TypeError``, ``KeyError``) on a record that is not one."""
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        counts = Counts(**data["counts"])
        return cls(data["source"], data["url"], data["sha256"], int(data["size"]), counts)


def data_dir() -> Path:
    """``$RESCUE_BENCH_CACHE_DIR/data``, or ``data`` in the platform's user cache dir for rescue-bench."""
    override = os.environ.get(CACHE_ENV)
    return (Path(override) if override else Path(platformdirs.user_cache_dir("rescue-bench"))) / "data"


def release_file() -> Path:
    return data_dir() / Path(RELEASE_PATH).name


def record_file() -> Path:
    return release_file().with_suffix(".json")


def github_url(base: str | None = None) -> str:
    """The release file's URL at the pinned commit, under ``base`` (else ``$RESCUE_BENCH_GITHUB_URL``)."""
    root = (base or os.environ.get(GITHUB_BASE_ENV) or GITHUB_BASE).rstrip("/")
    return f"{root}/{GITHUB_REPO}/{GITHUB_COMMIT}/{RELEASE_PATH}"


def hf_endpoint(base: str | None = None) -> str | None:
    """The Hugging Face endpoint; ``None`` leaves huggingface_hub's own (which honours ``HF_ENDPOINT``)."""
    return base or os.environ.get(HF_ENDPOINT_ENV) or None


def manual_route() -> str:
    """The words that tell a user offline how to get the file by hand."""
    return f"or download {github_url()} by hand and pass its path to --data"


def read_record() -> ReleaseRecord | None:
    """The installed release's record, ``None`` when there is none or it cannot be read."""
    try:
        return ReleaseRecord.from_json(json.loads(record_file().read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, KeyError):
        return None


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def installed_release() -> Path:
    """The downloaded release file, checked against its record.

    Raises:
        DataError: it has not been downloaded, or the file no longer matches the SHA-256 recorded when it was
            (one line naming the command that fixes it).
    """
    path = release_file()
    record = read_record()
    if record is None or not path.is_file():
        raise DataError(
            f"the official release is not downloaded yet: run `rescue-bench data get` ({manual_route()})"
        )
    try:
        found = sha256_of(path)
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if found != record.sha256:
        raise DataError(
            f"{path} changed since `rescue-bench data get` installed it (SHA-256 {found[:12]}..., recorded "
            f"{record.sha256[:12]}...): run `rescue-bench data get --force`"
        )
    return path


def hf_snapshot(repo_id: str = HF_REPO, *, endpoint: str | None = None) -> Path:
    """Download the dataset's snapshot (offline: find it in the Hugging Face cache); its local directory.

    Raises:
        DataError: the hub cannot be reached and the cache does not hold the dataset (one line: the command to
            run when online, and the manual route).
    """
    from huggingface_hub import snapshot_download

    try:
        with hf_progress_off():
            path = snapshot_download(repo_id=repo_id, repo_type="dataset", endpoint=hf_endpoint(endpoint))
        return Path(path)
    except Exception as exc:  # any hub failure gets the same advice
        raise DataError(
            f"cannot fetch the Hugging Face dataset {repo_id!r} ({type(exc).__name__}): when online, run "
            f"`rescue-bench data get --source hf`; offline, run `hf download {repo_id} "
            f"--repo-type dataset --local-dir DIR` elsewhere and pass DIR's benchmark_191.jsonl to --data, "
            f"or set HF_HOME to a cache that holds it"
        ) from None


def release_jsonl_in(snapshot: Path) -> Path:
    """The release JSONL inside a dataset snapshot, else the snapshot directory itself.

    The release keeps all samples in ``benchmark*.jsonl``, beside task files (``er.jsonl``, ``vp.jsonl``) that
    are not samples, so a lone JSONL file or one named ``benchmark*`` is taken.
    """
    candidates = sorted(snapshot.rglob("*.jsonl"))
    named = [p for p in candidates if p.name.startswith("benchmark")]
    if len(named) == 1:
        return named[0]
    return candidates[0] if len(candidates) == 1 else snapshot
