"""``rescue-bench data get``: download the official release, check it, and put it in the user cache whole.

From GitHub the file is read at the pinned release commit (:data:`~rescue_bench.data.release.GITHUB_COMMIT`);
from Hugging Face through ``huggingface_hub``. Either way the bytes go to a temporary file beside the target,
are validated by the loader (every sample must read cleanly) and counted against the paper's (191 samples:
174 couple, 17 family; 7,079 rows), and only then renamed into place with a record of their source and
SHA-256 (:mod:`rescue_bench.data.release`). A download that is cut off, truncated, too large or not the
release leaves nothing behind that ``--data rescue`` would read, and an earlier good copy stays as it was.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
import shutil
import urllib.error
import urllib.request
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from rescue_bench.atomic import write_atomic
from rescue_bench.data import release
from rescue_bench.data.load import read_source
from rescue_bench.errors import DataError

MAX_BYTES: Final = 64 << 20
"""The release is about 7 MB; a server sending more than this is not sending it."""
_CHUNK: Final = 1 << 16
_PART_SUFFIX: Final = ".part"


@dataclass(frozen=True, slots=True)
class Installed:
    """The release in the user cache, and whether this call downloaded it."""

    path: Path
    record: release.ReleaseRecord
    downloaded: bool


def fetch_release(
    source: release.Source = "github",
    *,
    base_url: str | None = None,
    timeout: float = 60.0,
    force: bool = False,
) -> Installed:
    """Download, check and install the release; a copy already installed and intact is kept unless ``force``.

    Raises:
        DataError: the source cannot be reached (the message names the command and the manual route), the
            download was cut off, or the file is not the release (its first problem, or the counts found).
    """
    target = release.release_file()
    if not force:
        with contextlib.suppress(DataError):
            path = release.installed_release()
            record = release.read_record()
            if record is not None:
                return Installed(path, record, downloaded=False)
    directory = target.parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"{directory}: cannot create ({exc.strerror or exc})") from None
    _remove_stale_parts(directory)
    part = directory / f".{target.name}.{os.getpid()}{_PART_SUFFIX}"
    try:
        if source == "github":
            url = release.github_url(base_url)
            size, sha256 = _download(url, part, timeout)
        else:
            url, size, sha256 = _copy_from_hub(part, base_url)
        counts = _check(part, url)
        record = release.ReleaseRecord(source, url, sha256, size, counts)
        _install(part, target, record)
    except OSError as exc:  # the cache directory itself (full disk, read-only)
        raise DataError(f"{directory}: cannot write the release ({exc.strerror or exc})") from None
    finally:
        part.unlink(missing_ok=True)
    return Installed(target, record, downloaded=True)


def _download(url: str, part: Path, timeout: float) -> tuple[int, str]:
    """Stream ``url`` into ``part``; its size and SHA-256. Every way it can fail is one ``DataError`` line."""
    request = urllib.request.Request(url, headers={"User-Agent": "rescue-bench"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            declared = response.headers.get("Content-Length")
            expected = int(declared) if declared and declared.isdigit() else None
            size, sha256 = _stream(response, part, url)
    except urllib.error.HTTPError as exc:
        raise DataError(f"cannot download {url}: HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise DataError(
            f"cannot reach {url} ({exc.reason}): when online, run `rescue-bench data get`, "
            f"{release.manual_route()}"
        ) from None
    except (OSError, http.client.HTTPException) as exc:  # reset, timeout, a broken reply mid-way
        raise DataError(
            f"the download of {url} was cut off ({type(exc).__name__}: {exc}); nothing was saved: "
            "run `rescue-bench data get` again"
        ) from None
    if expected is not None and size != expected:
        raise DataError(
            f"the download of {url} was cut off after {size:,} of {expected:,} bytes; nothing was saved: "
            "run `rescue-bench data get` again"
        )
    return size, sha256


def _stream(response: http.client.HTTPResponse, part: Path, url: str) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    with part.open("wb") as out:
        while block := response.read(_CHUNK):
            size += len(block)
            if size > MAX_BYTES:
                raise DataError(f"{url} sent more than {MAX_BYTES >> 20} MB: that is not the release file")
            digest.update(block)
            out.write(block)
        out.flush()
        os.fsync(out.fileno())
    return size, digest.hexdigest()


def _copy_from_hub(part: Path, endpoint: str | None) -> tuple[str, int, str]:
    """Copy the release JSONL of the Hugging Face snapshot into ``part``; its address, size and SHA-256."""
    snapshot = release.hf_snapshot(release.HF_REPO, endpoint=endpoint)
    found = release.release_jsonl_in(snapshot)
    if not found.is_file():
        raise DataError(
            f"the Hugging Face dataset {release.HF_REPO!r} holds no single benchmark*.jsonl file: "
            "run `rescue-bench data get` (from GitHub) instead"
        )
    with found.open("rb") as source, part.open("wb") as out:
        shutil.copyfileobj(source, out, _CHUNK)
        out.flush()
        os.fsync(out.fileno())
    address = f"hf://datasets/{release.HF_REPO}@{snapshot.name}/{found.relative_to(snapshot).as_posix()}"
    return address, part.stat().st_size, release.sha256_of(part)


def _check(part: Path, url: str) -> release.Counts:
    """The counts of a downloaded file that reads cleanly; ``DataError`` when it is not the release."""
    report = read_source(part)
    if report.errors:
        first = replace(report.errors[0], file=url)
        more = f" (and {len(report.errors) - 1} more)" if len(report.errors) > 1 else ""
        raise DataError(f"the downloaded file is not the release: {first.location()}: {first.message}{more}")
    samples = report.samples
    couple = sum(1 for s in samples if s.scenario == "couple")
    found = release.Counts(len(samples), couple, len(samples) - couple, sum(len(s.rows) for s in samples))
    if found != release.EXPECTED:
        raise DataError(
            f"the file from {url} holds {found.describe()}; the release holds {release.EXPECTED.describe()}: "
            "nothing was saved"
        )
    return found


def _install(part: Path, target: Path, record: release.ReleaseRecord) -> None:
    """The record first, then the file, each by rename: whatever stops in between, the file and the record
    disagree and ``installed_release`` refuses them, or the old pair stays."""
    text = json.dumps(record.to_json(), indent=2) + "\n"
    write_atomic(release.record_file(), text.encode("utf-8"))
    os.replace(part, target)


def _remove_stale_parts(directory: Path) -> None:
    """Temporary files of downloads whose process is gone (killed half way): never read, now removed."""
    for leftover in directory.glob(f".*{_PART_SUFFIX}*"):
        pid = leftover.name.split(_PART_SUFFIX)[0].rpartition(".")[2]
        if pid.isdigit() and not _alive(int(pid)):
            leftover.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
