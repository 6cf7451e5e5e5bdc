"""The viewer's reader, rows, filters and instance rebuild, checked against the raw run files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from tests.view.conftest import HOSTILE, _run, records
from typer.testing import CliRunner

from rescue_bench.cli.main import app as cli
from rescue_bench.data.load import load_samples
from rescue_bench.rundir import line_key
from rescue_bench.view.app import create_app
from rescue_bench.view.data import RunSource, ViewError, read_run, read_source, run_status
from rescue_bench.view.filters import BadQuery, Query, apply, neighbours, paginate, params, parse_query
from rescue_bench.view.transcript import rebuild


def test_rows_match_the_prediction_lines(runs: dict[str, Path]) -> None:
    view = read_run(runs["random"])
    raw = records(runs["random"])
    assert [r.instance_id for r in view.rows] == [str(r["instance_id"]) for r in raw]
    for row, record in zip(view.rows, raw, strict=True):
        if record["task"] in ("itp", "rpp"):
            prediction = record["prediction"]
            top = prediction[0] if isinstance(prediction, list) else prediction
            assert row.correct is (bool(record["valid"]) and top == record["gold"])
    assert not view.partial and view.status == "finished"


def test_filter_wrong_answers_of_one_label(runs: dict[str, Path]) -> None:
    view = read_run(runs["random"])
    raw = [r for r in records(runs["random"]) if r["task"] == "rpp"]
    label = str(raw[0]["gold"])
    expected = [
        r["instance_id"]
        for r in raw
        if r["gold"] == label and (not r["valid"] or r["prediction"][0] != label)  # type: ignore[index]
    ]
    got = apply(view.rows, parse_query({"task": "rpp", "gold": label, "correct": "no"}))
    assert [r.instance_id for r in got] == expected and expected


def test_right_in_a_wrong_in_b(runs: dict[str, Path]) -> None:
    a, b = read_run(runs["random"], 0), read_run(runs["majority"], 1)
    right = {
        str(r["instance_id"]): r["prediction"] == r["gold"] for run in ("random",) for r in records(runs[run])
    }
    right_b = {str(r["instance_id"]): r["prediction"] == r["gold"] for r in records(runs["majority"])}
    expected = sorted(i for i in right if i.split("::")[1] == "itp" and right[i] and not right_b[i])
    got = apply(a.rows, Query(task="itp", vs=1, cmp="a_only"), other=b.by_key)
    assert sorted(r.instance_id for r in got) == expected and expected


def test_text_search_finds_reply_text(runs: dict[str, Path]) -> None:
    view = read_run(runs["hostile"])
    found = apply(view.rows, Query(task="itp", q="ONERROR=alert(2)"))
    assert len(found) == sum(1 for r in records(runs["hostile"]) if r["task"] == "itp")
    assert apply(view.rows, Query(task="itp", q="no such words anywhere")) == []


def test_sort_pages_and_neighbours(runs: dict[str, Path]) -> None:
    view = read_run(runs["random"])
    rows = apply(view.rows, Query(task="rpp", sort="gold", desc=True))
    assert [r.gold for r in rows] == sorted((r.gold for r in rows), reverse=True)
    page = paginate(rows, Query(page=2, per=10))
    assert page.rows == rows[10:20] and page.number == 2 and page.total == len(rows)
    assert neighbours(rows, rows[1].instance_id) == (rows[0], rows[2])
    assert params(Query(task="rpp", sort="gold"), page=3) == {"task": "rpp", "sort": "gold", "page": "3"}


@pytest.mark.parametrize(
    "values", [{"page": "x"}, {"sort": "nope"}, {"correct": "maybe"}, {"per": "0"}, {"disagree": "lots"}]
)
def test_bad_queries_are_refused_clearly(values: dict[str, str]) -> None:
    with pytest.raises(BadQuery, match=next(iter(values))):
        parse_query(values)


def test_a_damaged_line_is_named(runs: dict[str, Path], tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(runs["random"], copy)
    lines = (copy / "predictions.jsonl").read_text().splitlines()
    lines[4] = lines[4][:20]
    (copy / "predictions.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(ViewError, match=r"predictions\.jsonl:5"):
        read_run(copy)


def test_a_running_run_is_read_again_when_it_grows(runs: dict[str, Path], tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(runs["random"], copy)
    manifest = json.loads((copy / "run.json").read_text())
    (copy / "run.json").write_text(json.dumps({**manifest, "status": "running"}))
    lines = (copy / "predictions.jsonl").read_text().splitlines(keepends=True)
    (copy / "predictions.jsonl").write_text("".join(lines[:100]))
    source = RunSource(copy, 0)
    first = source.get()
    assert first.partial and len(first.rows) == 100 and source.get() is first
    with (copy / "predictions.jsonl").open("a") as out:
        out.write("".join(lines[100:]))
    assert len(source.get().rows) == len(lines)


def test_rebuild_uses_the_request_batch_and_the_sample(runs: dict[str, Path]) -> None:
    view = read_run(runs["hostile"])
    source = read_source(view.data.manifest, view.path)
    row = next(r for r in view.rows if r.task == "rpp")
    reply = view.reply_of(row)
    assert reply is not None
    rebuilt = rebuild(source, row.task, row.sample_id, row.instance_id, reply)
    assert rebuilt.problem is None and rebuilt.batch == reply.instance_ids
    assert [m.role for m in rebuilt.messages][:1] == ["system"]
    sample = next(s for s in load_samples("demo") if s.sample_id == row.sample_id)
    target = next(t for t in rebuilt.turns if t.target)
    assert target.row_index == row.row_index
    assert target.text == sample.row(row.row_index).dialogue_cleaned
    assert HOSTILE in (reply.text or "")


def test_judge_disagreement_filter(runs: dict[str, Path], tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(runs["random"], copy)
    er = [str(r["instance_id"]) for r in records(copy) if r["task"] == "er"]
    verdicts = {i: (1 + n % 5, 5 - n % 5) for n, i in enumerate(er)}  # spreads 4, 2, 0, 2, 4, ...
    with (copy / "judgments.jsonl").open("a") as out:
        for instance_id, scores in verdicts.items():
            for judge, score in zip(("a/one", "b/two"), scores, strict=True):
                line = {"instance_id": instance_id, "task": "er", "judge": judge, "valid": True}
                out.write(json.dumps({**line, "scores": {"s_emo": score}, "problems": [], "raw": {}}) + "\n")
    view = read_run(copy)
    expected = sorted(i for i, (a, b) in verdicts.items() if abs(a - b) >= 3)
    got = apply(view.rows, parse_query({"task": "er", "disagree": "3"}))
    assert sorted(r.instance_id for r in got) == expected and expected
    assert all(r.judge_score == sum(verdicts[r.instance_id]) / 2 for r in got)


def test_judgments_belong_to_their_repeat(tmp_path: Path) -> None:
    """With ``--repeats 2``, each repeat's row holds its own judges' verdicts: spread 4 on repeat 0, none on
    repeat 1, and the instance page of repeat 1 lists only repeat 1's judgments."""
    run = _run(tmp_path / "run", "--model", "baseline/random", "--tasks", "er", "--repeats", "2")
    er = sorted({str(r["instance_id"]) for r in records(run)})
    with (run / "judgments.jsonl").open("a") as out:
        for instance_id in er:
            for repeat, scores in ((0, (1, 5)), (1, (3, 3))):
                for judge, score in zip(("a/one", "b/two"), scores, strict=True):
                    line = {"instance_id": instance_id, "task": "er", "judge": judge, "valid": True}
                    line |= {"scores": {"s_emo": score}, "problems": [], "raw": {}}
                    out.write(json.dumps(line | ({"repeat": repeat} if repeat else {})) + "\n")
    view = read_run(run)
    first, second = view.by_key[(er[0], 0)], view.by_key[(er[0], 1)]
    assert (first.disagreement, first.judge_score) == (4.0, 3.0)
    assert (second.disagreement, second.judge_score) == (0.0, 3.0)
    assert [j.repeat for j in view.judgments[line_key(er[0], 1)]] == [1, 1]
    got = apply(view.rows, parse_query({"task": "er", "disagree": "3"}))
    assert {(r.instance_id, r.repeat) for r in got} == {(i, 0) for i in er}
    page = (
        TestClient(create_app([run]), base_url="http://127.0.0.1")
        .get(f"/instances/{quote(er[0], safe='')}?repeat=1")
        .text
    )
    table = page.split('id="judgments"', 1)[1].split("</table>", 1)[0]
    assert table.count("<tr>") - 1 == 2  # the header row, then repeat 1's two verdicts


def test_messages_say_whether_the_data_is_the_runs(tmp_path: Path) -> None:
    """The dataset hash run.json recorded, against today's file (issue #35.12)."""
    data = tmp_path / "data.jsonl"
    runner = CliRunner()
    assert runner.invoke(cli, ["data", "synth", "--out", str(data), "--samples", "2"]).exit_code == 0
    run = _run_on(tmp_path / "run", data)
    view = read_run(run)
    row = next(r for r in view.rows if r.task == "rpp")
    url = f"/instances/{quote(row.instance_id, safe='')}?task=rpp"
    page = TestClient(create_app([run]), base_url="http://127.0.0.1").get(url).text
    assert "Messages sent" in page and "same content as the run recorded" in page
    samples = [json.loads(line) for line in data.read_text().splitlines()]
    first = next(r for r in samples[0]["rows"] if r["row_index"] < row.row_index)
    first["dialogue_cleaned"] = "A sentence the model never saw."
    data.write_text("".join(json.dumps(s) + "\n" for s in samples))
    page = TestClient(create_app([run]), base_url="http://127.0.0.1").get(url).text
    assert "Messages sent" not in page and "Messages (rebuilt)" in page
    assert "The data changed since the run" in page and str(data) in page
    recorded = json.loads((run / "run.json").read_text())["dataset"]["hash"]
    assert recorded[:12] in page


def _run_on(out: Path, data: Path) -> Path:
    args = ["run", "--data", str(data), "--out", str(out), "--no-bertscore", "--model", "baseline/random"]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return out


def test_a_run_status_is_read_through_the_manifest(tmp_path: Path) -> None:
    run_file = tmp_path / "run.json"
    assert run_status(tmp_path) is None  # no run.json yet
    run_file.write_text(json.dumps({"format": 2, "status": "stopped"}))
    assert run_status(tmp_path) == "stopped"
    # A damaged run.json has no status to trust: the viewer's reader then names the field.
    run_file.write_text(json.dumps({"format": 2, "status": "finished", "stauts": "x"}))
    assert run_status(tmp_path) is None
    run_file.write_text("[1]")
    assert run_status(tmp_path) is None
