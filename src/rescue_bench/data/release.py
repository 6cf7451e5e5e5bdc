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
import threading
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Final, Literal
from urllib.parse import urlsplit, urlunsplit

import platformdirs
from pydantic import StrictBool, TypeAdapter

from rescue_bench.data.sources import RELEASE
from rescue_bench.errors import DataError
from rescue_bench.quiet import hf_progress_off
from rescue_bench.redaction import public_url

GITHUB_REPO: Final = "Tomsawyerhu/RESCUE-bench"
GITHUB_COMMIT: Final = "0d0b0793e23157c7af76d1d301e63fc705b27f2a"
"""The release commit: the data file at this commit is the one the paper reports on."""
RELEASE_PATH: Final = "data/benchmark_191.jsonl"
GITHUB_BASE: Final = "https://raw.githubusercontent.com"
GITHUB_BASE_ENV: Final = "RESCUE_BENCH_GITHUB_URL"
"""Overrides :data:`GITHUB_BASE` (a mirror, or a local server in the tests)."""
HF_REPO: Final = "tomhu/relation_therapy"
OFFICIAL_SHA256: Final[str | None] = None
"""The SHA-256 of the release file at :data:`GITHUB_COMMIT`, once pinned here: then a file that differs is
never the official release, wherever it came from. Until then the pinned address decides
(:func:`is_pinned`)."""
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
    official: StrictBool = False
    """Whether it is the official release: from a pinned source (:func:`is_pinned`) and, where the official
    SHA-256 is known, matching it. Otherwise it is a copy from :attr:`url`, and runs and exports say so."""

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: object) -> ReleaseRecord:
        """Raises ``ValueError`` (a ``pydantic.ValidationError``) on a record that is not one."""
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        # A record written before the field was: judged by where it came from, as a new one is.
        record = RECORD.validate_python({"official": True, **data})
        official = record.official and is_official(record.source, record.url, record.sha256)
        return replace(record, official=official)

    @property
    def origin(self) -> str | None:
        """Where a copy that is not the official release came from (its public address); ``None`` for the
        official release."""
        return None if self.official else public_url(self.url)


RECORD: Final = TypeAdapter(ReleaseRecord)
"""Checks a release record read back (a file of ours, but in the user's cache directory)."""


def is_pinned(source: str, url: str) -> bool:
    """Whether ``url`` is a pinned source of the release: GitHub raw at the release commit, or the Hub
    dataset :data:`HF_REPO` fetched from the Hub itself (``hf://``; a mirror's address is kept as given).

    >>> is_pinned("github", github_url(GITHUB_BASE)), is_pinned("github", "https://mirror.example/x")
    (True, False)
    >>> is_pinned("hf", f"hf://datasets/{HF_REPO}@abc/data/benchmark_191.jsonl")
    True
    """
    if source == "github":
        return url == github_url(GITHUB_BASE)
    return source == "hf" and url.startswith(f"hf://datasets/{HF_REPO}@")


def is_official(source: str, url: str, sha256: str) -> bool:
    """A file is the official release when it came from a pinned source and matches the official SHA-256
    where that is known."""
    return is_pinned(source, url) and (OFFICIAL_SHA256 is None or sha256 == OFFICIAL_SHA256)


def data_dir() -> Path:
    """``$RESCUE_BENCH_CACHE_DIR/data``, or ``data`` in the platform's user cache dir for rescue-bench."""
    override = os.environ.get(CACHE_ENV)
    return (Path(override) if override else Path(platformdirs.user_cache_dir("rescue-bench"))) / "data"


def release_file() -> Path:
    return data_dir() / Path(RELEASE_PATH).name


def record_file() -> Path:
    return release_file().with_suffix(".json")


def github_url(base: str | None = None) -> str:
    """The release file's URL at the pinned commit, under ``base`` (else ``$RESCUE_BENCH_GITHUB_URL``); a
    query of ``base`` (a mirror's token) stays after the path.

    >>> url = github_url("https://mirror.example/raw/?token=abc")
    >>> url.startswith("https://mirror.example/raw/Tomsawyerhu/"), url.endswith(".jsonl?token=abc")
    (True, True)
    """
    root = base or os.environ.get(GITHUB_BASE_ENV) or GITHUB_BASE
    parts = urlsplit(root)
    path = f"{parts.path.rstrip('/')}/{GITHUB_REPO}/{GITHUB_COMMIT}/{RELEASE_PATH}"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


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
    except (OSError, ValueError):
        return None


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def release_origin(data: str | None) -> dict[str, str]:
    """``run.json``'s ``dataset.origin`` for a run on ``--data rescue`` whose installed copy is not the
    official release (where it came from); empty otherwise, so a run on the official release or other data
    records nothing more."""
    record = read_record() if data == RELEASE else None
    origin = None if record is None else record.origin
    return {} if origin is None else {"origin": origin}


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


def hf_snapshot(
    repo_id: str = HF_REPO, *, endpoint: str | None = None, deadline: float | None = None
) -> Path:
    """Download the dataset's snapshot (offline: find it in the Hugging Face cache); its local directory.

    ``deadline`` bounds the whole download in seconds (huggingface_hub has no overall limit): the download
    runs in a daemon thread, given up when the deadline passes.

    Raises:
        DataError: the hub cannot be reached and the cache does not hold the dataset (one line: the command to
            run when online, and the manual route), or the deadline passed.
    """
    from huggingface_hub import snapshot_download

    found: list[Path] = []
    failed: list[BaseException] = []

    def download() -> None:
        try:
            with hf_progress_off():
                path = snapshot_download(repo_id=repo_id, repo_type="dataset", endpoint=hf_endpoint(endpoint))
            found.append(Path(path))
        except Exception as exc:  # any hub failure gets the same advice
            failed.append(exc)

    worker = threading.Thread(target=download, name="rescue-bench-hf-download", daemon=True)
    worker.start()
    worker.join(deadline)
    if worker.is_alive():
        raise DataError(
            f"the Hugging Face dataset {repo_id!r} was not downloaded within the overall deadline of "
            f"{deadline:.0f} s; nothing was saved: run `rescue-bench data get --source hf` again (a larger "
            "--timeout gives it longer), or get it from GitHub"
        )
    if found:
        return found[0]
    raise DataError(
        f"cannot fetch the Hugging Face dataset {repo_id!r} ({type(failed[0]).__name__ if failed else '?'}): "
        f"when online, run `rescue-bench data get --source hf`; offline, run `hf download "
        f"{repo_id} --repo-type dataset --local-dir DIR` elsewhere and pass DIR's benchmark_191.jsonl to "
        "--data, or set HF_HOME to a cache that holds it"
    )


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
