"""How a session ends: context overflows named once per task with the fix, a step-down named in a degraded
run's reason."""

from __future__ import annotations

from collections import Counter

from rescue_bench.engine.ending import degraded_reason, run_status, stepped_down
from rescue_bench.rundir import Counts, PredictionLine


def line(task: str, n: int, problem: str | None) -> PredictionLine:
    return PredictionLine.from_json(
        {
            "instance_id": f"s::{task}::{n}",
            "task": task,
            "sample_id": "s",
            "valid": problem is None,
            "problems": [problem] if problem else [],
        }
    )


def overflow_of(tokens: int) -> str:
    return (
        f"request_failed: vllm/m at http://127.0.0.1:8080/v1: HTTP 400: This model's maximum context length "
        f"is 2048 tokens. However, you requested {tokens} tokens ({tokens - 512} in the messages, 512 in the "
        "completion). Please reduce the length of the messages or completion."
    )


def test_context_overflows_are_one_reason_per_task_with_the_sizes_and_the_fix() -> None:
    lines = [line("itp", n, overflow_of(2100 + 37 * n)) for n in range(12)]
    lines += [
        line("rpp", n, "request_failed: HTTP 400: Requested tokens (3001) exceed context window of 2048")
        for n in range(3)
    ]
    lines += [line("rpp", 9, "request_failed: HTTP 503: busy (gave up after 6 attempts)")]
    ending = run_status(lines, planned=16, degraded_share=0.5)
    assert ending.status == "incomplete"
    itp = ending.unanswered["itp"]
    assert len(itp) == 1  # not one reason per token count
    ((reason, n),) = itp.items()
    assert n == 12
    assert reason.startswith(
        "context overflow: requests of up to 2507 tokens exceed the server's context of 2048 tokens; "
    )
    assert "--context-size" in reason and "--max-tokens" in reason and "--n_ctx" in reason
    assert ending.unanswered["rpp"] == Counter(
        {
            reason.replace("2507", "3001"): 3,
            "HTTP 503: busy": 1,
        }
    )


def test_a_degraded_run_names_the_step_down_that_dropped_the_schema() -> None:
    counts = {
        "itp": Counts(response_formats={"json_object": 20}),
        "rpp": Counts(response_formats={"json_object": 4}),
    }
    note = stepped_down(counts, "json_schema")
    assert note is not None
    assert note.startswith(
        "the endpoint refused the run's response format (json_schema): the answers were asked in json_object "
        "(itp, rpp)"
    )
    assert "without the answer's schema" in note and "llamacpp-server/" in note
    lines = [line("itp", n, "missing: no answer for this item in the reply") for n in range(9)]
    lines.append(line("itp", 9, None))
    ending = run_status(lines, planned=10, degraded_share=0.5, step_down=note)
    reason = degraded_reason(ending)
    assert ending.status == "degraded" and reason is not None
    assert reason.startswith("90% of the answers failed; main reason: missing: no answer for this item")
    assert reason.endswith("likely fix: " + note)
    # llamacpp-server/'s own format keeps the schema: nothing to name.
    assert stepped_down({"itp": Counts(response_formats={"json_object+schema": 3})}, "json_schema") is None
    assert stepped_down({"itp": Counts(response_formats={"json_schema": 3})}, "json_schema") is None
    assert stepped_down({"itp": Counts(requests=3)}, "json_schema") is None
