"""gtop's CUPTI record offsets and generated tables against the CUPTI 13.0 headers."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from gen_cupti_tables import render

from gtop.cupti import records as rec
from gtop.cupti.tables import RECORD_SIZES

INCLUDE = Path("/usr/local/cuda-13.0/include")
pytestmark = pytest.mark.skipif(
    not (INCLUDE / "cupti_activity.h").exists() or shutil.which("gcc") is None,
    reason="needs the CUDA 13.0 CUPTI headers and gcc",
)
STRUCTS = {
    rec.CONCURRENT_KERNEL: "CUpti_ActivityKernel10",
    rec.MEMCPY: "CUpti_ActivityMemcpy6",
    rec.MEMSET: "CUpti_ActivityMemset4",
    rec.RUNTIME: "CUpti_ActivityAPI",
    rec.SYNCHRONIZATION: "CUpti_ActivitySynchronization2",
    rec.MARKER: "CUpti_ActivityMarker2",
    rec.OVERHEAD: "CUpti_ActivityOverhead3",
    rec.GRAPH_TRACE: "CUpti_ActivityGraphTrace2",
}
C_NAMES = {
    "registers": "registersPerThread",
    "object_pid": "objectId.pt.processId",
    "object_tid": "objectId.pt.threadId",
}


def c_member(field: str) -> str:
    return C_NAMES.get(field) or re.sub(r"_([a-z])", lambda m: m[1].upper(), field)


def measured(tmp_path: Path) -> dict[tuple[int, str], tuple[int, int]]:
    """(offset, size) of every field gtop reads, as gcc lays out the 13.0 structs."""
    lines = ["#include <stdio.h>", "#include <stddef.h>", "#include <cupti.h>", "int main(void) {"]
    for kind, struct in STRUCTS.items():
        for field in rec.FIELDS[kind]:
            member = c_member(field)
            lines.append(
                f'  printf("{kind} {field} %zu %zu\\n", offsetof({struct}, {member}), '
                f"sizeof((({struct} *)0)->{member}));"
            )
    lines += ["  return 0;", "}"]
    src, exe = tmp_path / "off.c", tmp_path / "off"
    src.write_text("\n".join(lines))
    subprocess.run(["gcc", f"-I{INCLUDE}", str(src), "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    return {(int(k), f): (int(o), int(z)) for k, f, o, z in (ln.split() for ln in out.splitlines())}


def test_field_offsets_and_sizes_match_the_headers(tmp_path):
    truth = measured(tmp_path)
    for kind in STRUCTS:
        for field, (fmt, offset) in rec.FIELDS[kind].items():
            assert (offset, np.dtype(fmt).itemsize) == truth[(kind, field)], (kind, field)


def test_generated_tables_match_headers():
    committed = Path(rec.__file__).with_name("tables.py").read_text()
    generated = subprocess.run(
        ["ruff", "format", "-"], input=render(INCLUDE), capture_output=True, text=True, check=True
    ).stdout
    assert generated == committed
    assert RECORD_SIZES[rec.CONCURRENT_KERNEL] == 216
