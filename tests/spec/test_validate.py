"""A spec file from the command line: one-line errors naming the file and the field, never a traceback; a
byte-order mark is read past; what ``--print-spec`` prints is read back as the same spec or refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.errors import ConfigError
from rescue_bench.spec import load_spec

runner = CliRunner()
SPEC = 'data = "demo"\ntasks = ["itp"]\nlimit_samples = 1\n\n[model]\nname = "baseline/random"\n'


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('[engine]\nconcurrency = "16"\n', "engine.concurrency: Input should be a valid integer"),
        ('[engine]\ncache = "yes"\n', "engine.cache: Input should be a valid boolean"),
        ("repeats = 1e9\n", "repeats: Input should be a valid integer"),
        (
            "[model.extra_body]\nmessages = []\n",
            "model.extra_body: 'messages' is set by the task, not by extra_body",
        ),
        (
            '[judges]\nname = "openai/gpt-4o"\n',
            "judges: one table where a list of tables belongs: write [[judges]] (two brackets)",
        ),
    ],
)
def test_a_bad_spec_file_is_one_line_naming_file_and_field(tmp_path: Path, text: str, error: str) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.replace("[model]", text + "\n[model]", 1) if text.startswith("[") else text + SPEC)
    code, output = invoke("run", "--spec", str(spec), "--out", str(tmp_path / "run"), "-q")
    assert code == 2 and output == f"error: --spec {spec}: {error}\n"
    assert not (tmp_path / "run").exists()


def test_a_byte_order_mark_is_read_past_and_bad_bytes_are_named(tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_bytes(b"\xef\xbb\xbf" + SPEC.encode())
    assert load_spec(spec)["model"] == {"name": "baseline/random"}
    code, output = invoke("estimate", "--spec", str(spec), "--print-spec")
    assert code == 0 and 'name = "baseline/random"' in output
    spec.write_bytes(b'data = "d\xe9mo"\n')
    with pytest.raises(ConfigError, match=r"^--spec: .*s\.toml: not UTF-8 text \(byte 9\)$"):
        load_spec(spec)


def test_print_spec_refuses_a_null_it_cannot_write(tmp_path: Path) -> None:
    body = '{"top_k": 20, "stop": null}'
    code, output = invoke(
        "run", "--model", "openai/gpt-4o-mini", "--tasks", "itp", "--extra-body", body, "--print-spec"
    )
    assert code == 2, output
    assert output == (
        "error: model.extra_body.stop is null, which a TOML spec cannot hold: leave the key out, or give the "
        "spec in Python\n"
    )
    code, output = invoke(
        "run",
        "--model",
        "openai/gpt-4o-mini",
        "--tasks",
        "itp",
        "--extra-body",
        '{"o": [1, {"a": 2}]}',
        "--print-spec",
    )
    assert code == 0 and "[model.extra_body]" in output and "o = [1, {a = 2}]" in output
    (tmp_path / "s.toml").write_text(output)
    again = invoke("run", "--spec", str(tmp_path / "s.toml"), "--print-spec")
    assert again == (0, output)
