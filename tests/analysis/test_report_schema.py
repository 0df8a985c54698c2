"""``gtop report --json`` against its published JSON Schema, ``docs/report.schema.json``
(issue 17 item 3), on real recordings, and the rule the schema states: a number's key
names its unit."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

from .recordings import RECORDINGS, ROOT

SCHEMA = json.loads((ROOT / "docs" / "report.schema.json").read_text())
UNIT = re.compile(r"_(s|ns|us|pct|percent|mib|bytes|w|c|mhz|per_s|count)$|^(bytes|seconds)$")
UNITLESS = {
    # counts, ids and indices
    "n", "count", "calls", "samples", "index", "device", "pid", "tid", "thread", "parent",
    "registers",
    "format_version", "schema_version", "throttle_reasons_seen", "ops_per_step",
    # ratios (0..1, or factors of 1)
    "gar", "share_of_window", "qif", "dif",
    "speedup", "low", "high", "gar_before", "gar_after", "model_error",
    # per-stream and per-cause tables: their parent key carries the unit
}  # fmt: skip
OTHERS = ("ranks", "agent_cost")
"""Sections other issues own (multi-rank jobs, the agent's cost): checked by theirs."""


def report(*args: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "gtop", "report", "--json", *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return json.loads(out.stdout)


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize(
    ("name", "window"),
    [
        ("constructed-io.gtop", []),
        ("loader-8-workers.gtop", ["--from", "4", "--to", "6"]),
        ("idle_busy_idle.gtop", []),  # NVML only: an approximate breakdown
        ("probes_triton.gtop", []),  # its metadata holds the CUDA version as an integer
        ("ddp-straggler-cpu.gtop", []),  # no GPU: no breakdown, no verdict
    ],
)
def test_report_validates(name: str, window: list[str]) -> None:
    doc = report(str(RECORDINGS / name), *window)
    errors = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in jsonschema.Draft202012Validator(SCHEMA).iter_errors(doc)
    ]
    assert not errors, "\n".join(errors[:10])


def numeric_keys(doc: Any, parent: str = "") -> Iterator[tuple[str, str]]:
    """(key, the key above it) of every number in ``doc``."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            if parent == "" and key in OTHERS:
                continue
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                yield key, parent
            else:
                yield from numeric_keys(value, key)
    elif isinstance(doc, list):
        for item in doc:
            yield from numeric_keys(item, parent)


def test_every_number_names_its_unit() -> None:
    """A number's key names its unit, or its parent's does (``off_s: {"H:IO": ...}``,
    ``utilization_pct: {"mean": ...}``), or it is a count, an id or a ratio."""
    doc = report(str(RECORDINGS / "train_loop_cupti.gtop"))
    bad = sorted(
        {
            f"{parent}.{key}"
            for key, parent in numeric_keys(doc)
            if not (UNIT.search(key) or UNIT.search(parent) or key in UNITLESS)
            and parent not in ("drops", "blocked_s")  # counts per stream; seconds per reason
        }
    )
    assert not bad, bad
