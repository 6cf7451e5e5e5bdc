"""Shared fixtures: where the shared real samples are, and isolation of user-level state."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
SUBSET = SHARED_DATA / "rescue_subset.jsonl"
EXPECTED = SHARED_DATA / "expected_instances.json"


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep caches and configs of the tests out of the user's home."""
    home = tmp_path_factory.mktemp("user")
    monkeypatch.setenv("RESCUE_BENCH_CACHE_DIR", str(home / "cache"))
    monkeypatch.setenv("RESCUE_BENCH_CONFIG_DIR", str(home / "config"))


@pytest.fixture
def real_subset() -> Path:
    """The 4 real release samples in ../shared/data.

    The test is skipped, with the reason shown, when they are absent.
    """
    if not SUBSET.exists():
        pytest.skip(
            f"shared real samples not found at {SUBSET} (third-party data, not shipped with the project)"
        )
    return SUBSET


@pytest.fixture
def expected_instances() -> Path:
    if not EXPECTED.exists():
        pytest.skip(
            f"expected instances not found at {EXPECTED} (third-party data, not shipped with the project)"
        )
    return EXPECTED
