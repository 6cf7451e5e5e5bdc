"""The Hugging Face progress bars are off inside `hf_progress_off` and as they were after it."""

from __future__ import annotations

import os
import sys

import pytest
from huggingface_hub.utils.tqdm import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

from rescue_bench.quiet import hf_progress_off

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("HF_HUB_DISABLE_PROGRESS_BARS")), reason="HF_HUB_DISABLE_PROGRESS_BARS is set"
)


class FakeTransformersLogging:
    """The three switches of ``transformers.utils.logging``; enabling also enables the hub's, as there."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def is_progress_bar_enabled(self) -> bool:
        return self.on

    def enable_progress_bar(self) -> None:
        self.on = True
        enable_progress_bars()

    def disable_progress_bar(self) -> None:
        self.on = False
        disable_progress_bars()


@pytest.fixture(autouse=True)
def _hub_bars_on_after() -> object:
    yield
    enable_progress_bars()


def test_off_inside_and_back_on_after() -> None:
    enable_progress_bars()
    with hf_progress_off():
        assert are_progress_bars_disabled()
    assert not are_progress_bars_disabled()


def test_a_caller_who_turned_them_off_keeps_them_off() -> None:
    disable_progress_bars()
    with hf_progress_off():
        pass
    assert are_progress_bars_disabled()


def test_they_come_back_even_when_the_block_fails() -> None:
    enable_progress_bars()
    with pytest.raises(RuntimeError), hf_progress_off():
        raise RuntimeError("boom")
    assert not are_progress_bars_disabled()


def test_transformers_loaded_before_is_silenced_and_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    enable_progress_bars()
    fake = FakeTransformersLogging(on=True)
    monkeypatch.setitem(sys.modules, "transformers.utils.logging", fake)
    with hf_progress_off():
        assert not fake.on and are_progress_bars_disabled()
    assert fake.on and not are_progress_bars_disabled()


def test_transformers_first_loaded_inside_ends_as_it_would_have_started(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    enable_progress_bars()
    monkeypatch.delitem(sys.modules, "transformers.utils.logging", raising=False)
    with hf_progress_off():
        # transformers reads the hub's switch when it is imported: it starts silent here
        fake = FakeTransformersLogging(on=not are_progress_bars_disabled())
        monkeypatch.setitem(sys.modules, "transformers.utils.logging", fake)
    assert fake.on and not are_progress_bars_disabled()


def test_a_silent_hub_stays_silent_when_transformers_was_on(monkeypatch: pytest.MonkeyPatch) -> None:
    disable_progress_bars()
    logging_module = FakeTransformersLogging(on=True)
    monkeypatch.setitem(sys.modules, "transformers.utils.logging", logging_module)
    with hf_progress_off():
        pass
    assert logging_module.on and are_progress_bars_disabled()
