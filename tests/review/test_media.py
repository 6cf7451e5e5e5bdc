"""Clips are served with Range support from the media root, and nothing else is served from anywhere."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from review_helpers import Client, cookie_header, raw_get

from rescue_bench.review.media import MediaNotFound, check_relative, resolve_media

SECRET = b"TOP-SECRET-OUTSIDE-THE-ROOT"
CLIP = "clips/couple_s01/row_0001.mp4"


@pytest.fixture
def outside(workdir: Path) -> Path:
    """A secret file next to the media root, with a media suffix so that only the path checks protect it."""
    secret = workdir.parent / "secret.mp4"
    secret.write_bytes(SECRET)
    return secret


def test_clip_is_served_whole_and_by_range(ann: Client, workdir: Path) -> None:
    data = os.urandom(5000)
    (workdir / CLIP).write_bytes(data)
    whole = ann.get(f"/media/{CLIP}")
    assert whole.status_code == 200 and whole.content == data
    assert whole.headers["content-type"] == "video/mp4" and whole.headers["accept-ranges"] == "bytes"
    part = ann.get(f"/media/{CLIP}", headers={"Range": "bytes=100-299"})
    assert part.status_code == 206
    assert part.content == data[100:300]
    assert part.headers["content-range"] == "bytes 100-299/5000"
    tail = ann.get(f"/media/{CLIP}", headers={"Range": "bytes=-10"})
    assert tail.status_code == 206 and tail.content == data[-10:]
    beyond = ann.get(f"/media/{CLIP}", headers={"Range": "bytes=6000-7000"})
    assert beyond.status_code == 416


def test_media_needs_login(anon: TestClient) -> None:
    response = anon.get(f"/media/{CLIP}")
    assert response.status_code == 303 and response.headers["location"].startswith("/login")


TRAVERSALS = (
    "/media/../secret.mp4",
    "/media/clips/../../secret.mp4",
    "/media/%2e%2e/secret.mp4",
    "/media/%2E%2E/secret.mp4",
    "/media/clips/..%2f..%2fsecret.mp4",
    "/media/%252e%252e/secret.mp4",
    "/media/%252e%252e%252fsecret.mp4",
    "/media/..%5csecret.mp4",
    "/media//%2e%2e/secret.mp4",
    "/media/%2fetc%2fpasswd",
)


def test_traversal_is_refused(app: FastAPI, ann: Client, outside: Path) -> None:
    cookie = cookie_header(ann)
    assert raw_get(app, f"/media/{CLIP}", cookie)[0] == 200  # the raw client itself works
    for raw_path in TRAVERSALS:
        status, body = raw_get(app, raw_path, cookie)
        assert status == 404, raw_path
        assert SECRET not in body, raw_path


def test_traversal_through_the_http_client_too(ann: Client, outside: Path) -> None:
    for path in (
        "/media/%2e%2e/secret.mp4",
        "/media/%252e%252e/secret.mp4",
        "/media/clips%2f..%2f..%2fsecret.mp4",
    ):
        response = ann.get(path)
        assert response.status_code == 404, path
        assert SECRET not in response.content


def test_symlink_out_of_the_root_is_refused(ann: Client, workdir: Path, outside: Path) -> None:
    (workdir / "clips" / "escape.mp4").symlink_to(outside)
    (workdir / "clips" / "outdir").symlink_to(outside.parent, target_is_directory=True)
    for path in ("/media/clips/escape.mp4", "/media/clips/outdir/secret.mp4"):
        response = ann.get(path)
        assert response.status_code == 404, path
        assert SECRET not in response.content


def test_symlink_inside_the_root_is_followed(ann: Client, workdir: Path) -> None:
    (workdir / "clips" / "alias.mp4").symlink_to(workdir / CLIP)
    assert ann.get("/media/clips/alias.mp4").content == (workdir / CLIP).read_bytes()


def test_non_media_files_in_the_root_are_not_served(ann: Client, workdir: Path) -> None:
    (workdir / "review.db").write_bytes(b"SQLite format 3 secret hashes")
    (workdir / "clips" / "db.mp4").symlink_to(workdir / "review.db")
    (workdir / ".hidden").mkdir()
    (workdir / ".hidden" / "x.mp4").write_bytes(b"hidden")
    for path in (
        "/media/review.db",
        "/media/workdir.json",
        "/media/clips/db.mp4",
        "/media/.hidden/x.mp4",
        "/media/segments/couple_s01/manifest.json",
    ):
        assert ann.get(path).status_code == 404, path


def test_check_relative_rules() -> None:
    assert check_relative("clips/a/row_0001.webm") == ("clips", "a", "row_0001.webm")
    for bad in (
        "",
        "/abs/x.mp4",
        "a//b.mp4",
        "./x.mp4",
        "a/../b.mp4",
        ".x/a.mp4",
        "a\\b.mp4",
        "a%2e.mp4",
        "a\x00.mp4",
        "notes.txt",
        "clip",
    ):
        with pytest.raises(MediaNotFound):
            check_relative(bad)


def test_resolve_media_missing_and_loops(tmp_path: Path) -> None:
    (tmp_path / "loop.mp4").symlink_to(tmp_path / "loop.mp4")
    for name in ("missing.mp4", "loop.mp4"):
        with pytest.raises(MediaNotFound):
            resolve_media(tmp_path, name)
