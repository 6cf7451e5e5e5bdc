"""``rescue-bench data get``: download the official release, check it, and put it in the user cache whole.

From GitHub the file is read at the pinned release commit (:data:`~rescue_bench.data.release.GITHUB_COMMIT`);
from Hugging Face through ``huggingface_hub``. Either way the bytes go to a temporary file beside the target,
are validated by the loader (every sample must read cleanly) and counted against the paper's (191 samples:
174 couple, 17 family; 7,079 rows), and only then renamed into place with a record of their source and
SHA-256 (:mod:`rescue_bench.data.release`). A download that is cut off, truncated, too large or not the
release leaves nothing behind that ``--data rescue`` would read, and an earlier good copy stays as it was.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.client
import json
import os
import shutil
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final
from urllib.parse import unquote, urlsplit, urlunsplit

from rescue_bench.atomic import write_atomic
from rescue_bench.data import release
from rescue_bench.data.load import read_source
from rescue_bench.errors import DataError
from rescue_bench.redaction import public_url, redact, scrub_text, url_secrets

MAX_BYTES: Final = 64 << 20
"""The release is about 7 MB; a server sending more than this is not sending it."""
MIN_RATE: Final = 32 << 10
"""Bytes a second a download must average once ``--timeout`` seconds have passed: a server dripping the
file slower is given up, as one that sends nothing for ``--timeout`` seconds (a stall) is."""
RELEASE_BOUND: Final = 8 << 20
"""A bound on the release's size, for the overall deadline: ``--timeout`` + this at :data:`MIN_RATE`."""
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
            url, size, sha256 = _copy_from_hub(part, base_url, deadline(timeout))
        # Only the public address is kept: a mirror's token or password is never written or shown.
        counts = _check(part, public_url(url))
        official = release.is_official(source, url, sha256)
        record = release.ReleaseRecord(source, public_url(url), sha256, size, counts, official)
        _install(part, target, record)
    except OSError as exc:  # the cache directory itself (full disk, read-only)
        raise local_write_error(directory, exc) from None
    finally:
        part.unlink(missing_ok=True)
    return Installed(target, record, downloaded=True)


def deadline(timeout: float) -> float:
    """The overall deadline of a download: ``--timeout``, then the release's size at :data:`MIN_RATE`.

    >>> deadline(5.0)
    261.0
    """
    return timeout + RELEASE_BOUND / MIN_RATE


def local_write_error(where: Path, exc: OSError) -> DataError:
    """A write into the user cache that failed (a full disk, a read-only folder): named as such, never as a
    download that was cut off."""
    return DataError(
        f"{where}: cannot write the release into the cache ({exc.strerror or exc}); nothing was installed: "
        f"free some space or make it writable (or set {release.CACHE_ENV} to another folder), then run "
        "`rescue-bench data get` again"
    )


def _download(url: str, part: Path, timeout: float) -> tuple[int, str]:
    """Stream ``url`` into ``part``; its size and SHA-256. Every way it can fail is one ``DataError`` line,
    which shows the URL without its secrets (a token in its query, a password)."""
    shown = public_url(url)
    request = urllib.request.Request(*_with_credentials(url))
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            declared = response.headers.get("Content-Length")
            expected = int(declared) if declared and declared.isdigit() else None
            size, sha256 = _stream(response, part, shown, timeout)
    except urllib.error.HTTPError as exc:
        raise DataError(
            f"cannot download {shown}: HTTP {exc.code} {redact_text(str(exc.reason), url)}"
        ) from None
    except urllib.error.URLError as exc:
        raise DataError(
            f"cannot reach {shown} ({redact_text(str(exc.reason), url)}): when online, run "
            f"`rescue-bench data get`, {release.manual_route()}"
        ) from None
    except TimeoutError:
        raise DataError(
            f"the download of {shown} stalled: nothing came for {timeout:g} s (--timeout); nothing was "
            "saved: run `rescue-bench data get` again"
        ) from None
    except (OSError, http.client.HTTPException) as exc:  # reset, a broken reply mid-way
        raise DataError(
            f"the download of {shown} was cut off ({type(exc).__name__}: {redact_text(str(exc), url)}); "
            "nothing was saved: run `rescue-bench data get` again"
        ) from None
    if expected is not None and size != expected:
        raise DataError(
            f"the download of {shown} was cut off after {size:,} of {expected:,} bytes; nothing was saved: "
            "run `rescue-bench data get` again"
        )
    return size, sha256


def _with_credentials(url: str) -> tuple[str, None, dict[str, str]]:
    """``url`` without its ``user:password@`` (urllib would take them for the host name), and the headers
    that send them as HTTP Basic authentication instead."""
    parts = urlsplit(url)
    headers = {"User-Agent": "rescue-bench"}
    if parts.username is None:
        return url, None, headers
    token = base64.b64encode(f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()).decode()
    headers["Authorization"] = f"Basic {token}"
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment)), None, headers


def redact_text(text: str, url: str) -> str:
    """An error's text without the secrets of ``url`` (a library may quote the address it was given)."""
    return redact(scrub_text(text), url_secrets(url))


def _stream(response: http.client.HTTPResponse, part: Path, shown: str, timeout: float) -> tuple[int, str]:
    """Read the body into ``part`` under three limits, each named when it ends the download: a stall (the
    socket's ``timeout``), :data:`MIN_RATE` once ``timeout`` seconds have passed, and :data:`MAX_BYTES`.
    A local write that fails is named as such (:func:`local_write_error`)."""
    digest = hashlib.sha256()
    size = 0
    started = time.monotonic()
    try:
        out = part.open("wb")
    except OSError as exc:
        raise local_write_error(part.parent, exc) from None
    with out:
        # read1: what one receive gives, so a dripping server cannot keep a read waiting for a whole chunk.
        while block := response.read1(_CHUNK):
            size += len(block)
            if size > MAX_BYTES:
                raise DataError(f"{shown} sent more than {MAX_BYTES >> 20} MB: that is not the release file")
            elapsed = time.monotonic() - started
            if elapsed > timeout and size / elapsed < MIN_RATE:
                raise DataError(
                    f"the download of {shown} was too slow: {size:,} bytes in {elapsed:.0f} s, under the "
                    f"minimum of {MIN_RATE >> 10} KiB/s after --timeout {timeout:g} s; nothing was saved: "
                    "run `rescue-bench data get` again (or from the other --source)"
                )
            digest.update(block)
            try:
                out.write(block)
            except OSError as exc:
                raise local_write_error(part.parent, exc) from None
        try:
            out.flush()
            os.fsync(out.fileno())
        except OSError as exc:
            raise local_write_error(part.parent, exc) from None
    return size, digest.hexdigest()


def _copy_from_hub(part: Path, endpoint: str | None, limit: float) -> tuple[str, int, str]:
    """Copy the release JSONL of the Hugging Face snapshot into ``part``; its address, size and SHA-256.

    The address is ``hf://datasets/...`` from the Hub itself, else the mirror's public address.
    """
    snapshot = release.hf_snapshot(release.HF_REPO, endpoint=endpoint, deadline=limit)
    found = release.release_jsonl_in(snapshot)
    if not found.is_file():
        raise DataError(
            f"the Hugging Face dataset {release.HF_REPO!r} holds no single benchmark*.jsonl file: "
            "run `rescue-bench data get` (from GitHub) instead"
        )
    try:
        with found.open("rb") as source, part.open("wb") as out:
            shutil.copyfileobj(source, out, _CHUNK)
            out.flush()
            os.fsync(out.fileno())
    except OSError as exc:
        raise local_write_error(part.parent, exc) from None
    where = f"{release.HF_REPO}@{snapshot.name}/{found.relative_to(snapshot).as_posix()}"
    mirror = release.hf_endpoint(endpoint) or os.environ.get("HF_ENDPOINT")
    address = f"hf://datasets/{where}" if not mirror else f"{public_url(mirror)}/datasets/{where}"
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
