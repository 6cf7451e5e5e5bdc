"""Time the review app (``rescue-bench review``) on a store of the paper's size, reviewed by one annotator and
by three (figures, not gates).

Usage: ``python benchmarks/bench_review.py [--samples 191] [--repeats 10] [--slow-repeats 3] [--json FILE]``.

Setup: ``rescue-bench data synth --samples N`` (fictional data at the release's size: 191 segments, 7,079
rows), in SQLite databases in a temporary directory. Users are added with ``review add-user`` (argon2 with its
default parameters) and sign in through the login form; the pages are driven in process with FastAPI's
TestClient (real ASGI requests with the session cookie and CSRF token, no network). Commands run in process
through the CLI (``CliRunner``).

One annotator (``review init``, one review per row):

* ``review load`` of the JSONL into the migrated, empty store (once);
* the dashboard, a segment page and a row view (each of ``--repeats`` segments or rows spread over the store);
* saving a row: the POST of the row editor's form with one field changed, *Save and mark reviewed* (the
  redirect that follows is not included), on ``--repeats`` rows;
* the export with validation: the admin's download (``/admin/export``), after every row is marked reviewed
  (``store.set_reviewed``, as *Mark reviewed* does; not timed).

Three annotators (``review init --reviews 3``; the same data, loaded again): three review files in the
release format that ``import-reviews`` takes, one per annotator: ``ann``'s is the data as it is, ``ben``'s
moves every intensity of one segment in ten by one point, ``cat``'s changes up to four utterance types of
another one in ten. Timed: ``import-reviews`` of each file (once each), ``ann``'s file again (nothing
changed), then the dashboard, a segment page, a row view (as ``ann``), the agreement page and the export.

Pages print the median and maximum of their requests (the export and the agreement page: of
``--slow-repeats``), and the median CPU time this process spent on one; a command, its time and CPU time.
The CPU time counts the app and SQLite (both run in this process); on a machine shared with other work it
moves far less than the wall clock.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
REPO = Path(__file__).resolve().parent.parent
PASSWORD = "a benchmark password"
USERS = {"ada": "admin", "ann": "annotator", "ben": "annotator", "cat": "annotator"}


def _cli(*args: str) -> str:
    from typer.testing import CliRunner

    from rescue_bench.cli.main import app

    result = CliRunner().invoke(app, list(args), env={"BENCH_PW": PASSWORD}, catch_exceptions=False)
    if result.exit_code != 0:
        raise SystemExit(result.output)
    return result.output


class Timer:
    """Wall-clock and CPU milliseconds of timed steps. The CPU time is this process's (the app runs in it, on
    the TestClient's thread, and SQLite with it): on a machine shared with other work it moves far less than
    the wall clock."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def __call__(self, step: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        wall, cpu = time.perf_counter(), time.process_time()
        result = step(*args, **kwargs)
        self.cpu.append(1000 * (time.process_time() - cpu))
        self.wall.append(1000 * (time.perf_counter() - wall))
        return result

    def figures(self) -> dict[str, float]:
        return {
            "median_ms": round(statistics.median(self.wall), 1),
            "max_ms": round(max(self.wall), 1),
            "cpu_median_ms": round(statistics.median(self.cpu), 1),
        }

    def once(self) -> dict[str, float]:
        return {"s": round(self.wall[-1] / 1000, 2), "cpu_s": round(self.cpu[-1] / 1000, 2)}


def _spread(items: list[int], count: int) -> list[int]:
    """``count`` items evenly spread over ``items`` (all of them when there are fewer)."""
    if count >= len(items):
        return items
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


# -- data and review files -----------------------------------------------------------------------------------


def synthetic(folder: Path, samples: int) -> tuple[Path, list[dict[str, Any]]]:
    data = folder / "synthetic.jsonl"
    _cli("data", "synth", "--out", str(data), "--samples", str(samples))
    return data, [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines() if line]


def _moved(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every intensity of one segment in ten one point higher (one lower at 10)."""
    out = json.loads(json.dumps(samples))
    for sample in out[::10]:
        for row in sample["rows"]:
            for emotion in row["internal_emotion"]:
                emotion["intensity"] += 1 if emotion["intensity"] < 10 else -1
    return out


def _retyped(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Up to four utterance types of one other segment in ten changed (to the next type of the taxonomy)."""
    from rescue_bench.taxonomy import UTTERANCE_TYPES

    types = list(UTTERANCE_TYPES)
    out = json.loads(json.dumps(samples))
    for sample in out[5::10]:
        for row in [row for row in sample["rows"] if row["utterance_type"]][:4]:
            row["utterance_type"] = types[(types.index(row["utterance_type"]) + 1) % len(types)]
    return out


def review_files(folder: Path, samples: list[dict[str, Any]]) -> dict[str, Path]:
    files = {}
    for name, chosen in (("ann", samples), ("ben", _moved(samples)), ("cat", _retyped(samples))):
        path = folder / f"{name}.jsonl"
        path.write_text("".join(json.dumps(s) + "\n" for s in chosen), encoding="utf-8")
        files[name] = path
    return files


# -- the app -------------------------------------------------------------------------------------------------


def _helpers() -> Any:
    """The review tests' form reader and login (a browser's view of a form, kept in one place)."""
    sys.path.insert(0, str(REPO / "tests" / "review"))
    import review_helpers

    return review_helpers


class Store:
    """One review store: its database, the app on it, and a signed-in client per user."""

    def __init__(self, folder: Path, name: str, reviews: int) -> None:
        self.db = f"sqlite:///{folder / name}.db"
        _cli("review", "init", "--reviews", str(reviews), "--db", self.db)
        self.clients: dict[str, Any] = {}

    def add_users(self) -> None:
        for name, role in USERS.items():
            _cli("review", "add-user", name, "--role", role, "--password-env", "BENCH_PW", "--db", self.db)

    def start(self) -> None:
        from fastapi.testclient import TestClient

        from rescue_bench.review.app import create_app
        from rescue_bench.review.settings import ReviewSettings, host_names

        self.app = create_app(ReviewSettings(db_url=self.db, allowed_hosts=host_names(["testserver"])))
        for name in USERS:
            client = TestClient(self.app, follow_redirects=False)
            _helpers().login(client, name, PASSWORD)  # the forms carry the session's CSRF token
            self.clients[name] = client

    def ids(self) -> tuple[list[int], list[int]]:
        """The primary keys of the segments and of the rows."""
        from sqlalchemy import select

        from rescue_bench.review.db import RowRecord, Segment

        with self.app.state.review.sessions() as session:
            segments = list(session.scalars(select(Segment.id).order_by(Segment.id)))
            rows = list(session.scalars(select(RowRecord.id).order_by(RowRecord.id)))
        return segments, rows

    def reviews(self) -> int:
        """The active reviews in the store."""
        from sqlalchemy import func, select

        from rescue_bench.review.db import Review

        with self.app.state.review.sessions() as session:
            return int(
                session.scalar(select(func.count()).select_from(Review).where(Review.active.is_(True))) or 0
            )

    def get(self, user: str, url: str) -> Any:
        response = self.clients[user].get(url)
        if response.status_code != 200:
            raise SystemExit(f"{url}: HTTP {response.status_code}")
        return response

    def timed(self, user: str, urls: list[str]) -> dict[str, float]:
        """Each URL once, after one untimed request of the first (the app's first-use costs)."""
        self.get(user, urls[0])
        timer = Timer()
        for url in urls:
            timer(self.get, user, url)
        return timer.figures()

    def stop(self) -> None:
        for client in self.clients.values():
            client.close()
        self.app.state.review.sessions.kw["bind"].dispose()


def save_rows(store: Store, rows: list[int]) -> dict[str, float]:
    """Time the POST of each row's editor with its dialogue changed, *Save and mark reviewed*."""
    helpers = _helpers()
    client = store.clients["ann"]
    timer = Timer()
    for pk in rows:
        fields = helpers.form_fields(store.get("ann", f"/rows/{pk}").text)
        dialogue = dict(fields)["f-dialogue_cleaned"]
        fields = helpers.replace(fields, "f-dialogue_cleaned", dialogue + " (checked)")
        response = timer(helpers.post_form, client, f"/rows/{pk}", fields, action="save_review")
        where = response.headers.get("location", "")
        if response.status_code != 303 or "notice=reviewed" not in where:
            raise SystemExit(f"saving row {pk}: HTTP {response.status_code}, to {where!r}")
    return timer.figures()


def mark_all_reviewed(store: Store) -> None:
    from sqlalchemy import select

    from rescue_bench.review.db import RowRecord, user_by_name
    from rescue_bench.review.store import set_reviewed

    with store.app.state.review.sessions() as session:
        user = user_by_name(session, "ada")
        assert user is not None
        for row in session.scalars(select(RowRecord).where(RowRecord.reviewed.is_(False))).all():
            set_reviewed(session, row, row.version, user, reviewed=True)


def export(store: Store, repeats: int) -> dict[str, Any]:
    timer = Timer()
    texts = [timer(store.get, "ada", "/admin/export").text for _ in range(repeats)]
    return {**timer.figures(), "segments": texts[-1].count("\n")}


# -- the two stores ------------------------------------------------------------------------------------------


def one_annotator(folder: Path, data: Path, repeats: int, slow: int) -> dict[str, Any]:
    store = Store(folder, "single", 1)
    timer = Timer()
    loaded = timer(_cli, "review", "load", str(data), "--db", store.db)
    store.add_users()
    store.start()
    try:
        segments, rows = store.ids()
        found: dict[str, Any] = {
            "segments": len(segments),
            "rows": len(rows),
            "load": {**timer.once(), "said": loaded.strip()},
            "dashboard": store.timed("ann", ["/"] * repeats),
            "segment page": store.timed("ann", [f"/segments/{pk}" for pk in _spread(segments, repeats)]),
            "row view": store.timed("ann", [f"/rows/{pk}" for pk in _spread(rows, repeats)]),
            "saving a row": save_rows(store, _spread(rows[1:], repeats)),
        }
        mark_all_reviewed(store)
        found["export"] = export(store, slow)
    finally:
        store.stop()
    return found


def three_annotators(
    folder: Path, data: Path, samples: list[dict[str, Any]], repeats: int, slow: int
) -> dict[str, Any]:
    store = Store(folder, "triple", 3)
    _cli("review", "load", str(data), "--db", store.db)
    store.add_users()
    files = review_files(folder, samples)
    imports = []
    for name, path in [*files.items(), ("ann", files["ann"])]:
        timer = Timer()
        said = timer(_cli, "review", "import-reviews", str(path), "--user", name, "--db", store.db)
        imports.append({"user": name, **timer.once(), "said": said.strip()})
    store.start()
    try:
        segments, rows = store.ids()
        found: dict[str, Any] = {
            "segments": len(segments),
            "rows": len(rows),
            "reviews": store.reviews(),
            "imports": imports,
            "dashboard": store.timed("ann", ["/"] * repeats),
            "segment page": store.timed("ann", [f"/segments/{pk}" for pk in _spread(segments, repeats)]),
            "row view": store.timed("ann", [f"/rows/{pk}" for pk in _spread(rows, repeats)]),
            "agreement page": store.timed("ann", ["/agreement"] * slow),
            "export": export(store, slow),
        }
    finally:
        store.stop()
    return found


def machine() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "database": f"SQLite {sqlite3.sqlite_version}"}


def _print(title: str, found: dict[str, Any]) -> None:
    print(title)
    for name in ("dashboard", "segment page", "row view", "saving a row", "agreement page", "export"):
        if name in found:
            got = found[name]
            extra = f"   ({got['segments']} segments)" if name == "export" else ""
            print(
                f"  {name:16s} median {got['median_ms']:8.1f} ms   max {got['max_ms']:8.1f} ms   "
                f"CPU {got['cpu_median_ms']:8.1f} ms{extra}"
            )


def _print_once(name: str, got: dict[str, Any]) -> None:
    print(f"  {name:16s} {got['s']:7.2f} s   CPU {got['cpu_s']:7.2f} s   ({got['said']})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=191, help="Synthetic segments (191: the paper's).")
    parser.add_argument("--repeats", type=int, default=10, help="Requests per page (spread over the store).")
    parser.add_argument("--slow-repeats", type=int, default=3, help="Requests of the export and agreement.")
    parser.add_argument("--json", type=Path, help="Also write the figures to this file.")
    args = parser.parse_args()
    if args.samples < 1 or args.repeats < 1 or args.slow_repeats < 1:
        parser.error("--samples, --repeats and --slow-repeats must be at least 1")

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data, samples = synthetic(folder, args.samples)
        single = one_annotator(folder, data, args.repeats, args.slow_repeats)
        triple = three_annotators(folder, data, samples, args.repeats, args.slow_repeats)
    result = {"machine": machine(), "one annotator": single, "three annotators": triple}

    print(f"{result['machine']['cpus']} CPUs, {result['machine']['database']}")
    _print(f"one annotator: {single['segments']} segments, {single['rows']} rows", single)
    _print_once("review load", single["load"])
    _print(f"three annotators: {triple['rows']} rows, {triple['reviews']} reviews", triple)
    for done in triple["imports"]:
        _print_once("import-reviews", done)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
