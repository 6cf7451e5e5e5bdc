"""Outside ``tasks/`` (and the paper's published numbers) no source file names a task in code.

Task facts live in each task's module (``TaskInfo``) and every list elsewhere is derived from the
registry, so a seventh task is one module. This test reads the code (not docstrings or comments) of
every module and fails on an identifier or a string key that names a built-in task; the files in
``KNOWN`` still do, each for a stated reason, and leave the list when they are fixed.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from rescue_bench.tasks import task_infos

SRC = Path(__file__).resolve().parents[1] / "src" / "rescue_bench"
NAMES = frozenset(info.name for info in task_infos() if info.paper_position is not None)
EXEMPT = {
    "report/paper.py": "the paper's published numbers, by task",
    "adapters/lm_eval_tasks/rescue_bench/utils.py": "lm-eval's task YAML names a dataset function per task "
    "(`!function utils.itp_dataset`); package data read by lm-eval, not a module of this package",
}
KNOWN = {}
"""Files that still name tasks, and why: to be derived from the registry."""
WORD = re.compile(r"[A-Za-z0-9]+")
METRIC_KEYS = frozenset(
    key
    for info in task_infos()
    for key in (
        *info.headline,
        *(c.metric for c in info.paper_columns),
        *(info.judge.score_keys if info.judge else ()),
        *((info.instance_score[0],) if info.instance_score else ()),
    )
)
"""Metric keys (ER's ``s_er``): a task's own facts, named where its scores are read, not task names."""


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            for statement in node.body:
                if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                    out.add(id(statement.value))
    return out


def _identifier(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.name
    if isinstance(node, ast.arg):
        return node.arg
    if isinstance(node, ast.keyword):
        return node.arg
    if isinstance(node, ast.alias):
        return node.asname or node.name.rsplit(".", 1)[-1]
    return None


def task_names_in(source: str) -> list[tuple[int, str]]:
    """(line, text) of each identifier or string constant of ``source`` (docstrings aside) with a word that is
    a built-in task's name (lower case: prose such as "ER/VP" in a message is not code).

    >>> task_names_in('KEY = "rpp_transition"\\ndef f():\\n    "About RPP and itp."\\n    return order')
    [(1, 'rpp_transition')]
    """
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            text = node.value
        else:
            text = _identifier(node) or ""
            text = text.lower() if text else text
        if text and text not in METRIC_KEYS and NAMES & set(WORD.findall(text.replace("_", " "))):
            found.append((getattr(node, "lineno", 0), text))
    return sorted(found)


def test_no_file_outside_tasks_names_a_task() -> None:
    offenders = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("tasks/") or rel in EXEMPT or rel in KNOWN:
            continue
        hits = task_names_in(path.read_text(encoding="utf-8"))
        if hits:
            offenders[rel] = hits[:3]
    assert not offenders, f"derive these from the task registry (TaskInfo): {offenders}"


def test_the_check_sees_a_task_name() -> None:
    assert task_names_in('if task == "stp":\n    pass') == [(1, "stp")]
    assert task_names_in("def stp_kind(x):\n    return x") == [(1, "stp_kind")]
    assert task_names_in('"""ITP and RPP."""\nx = "Therapist"') == []
