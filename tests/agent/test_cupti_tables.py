"""gtop's CUPTI record offsets and tables against NVIDIA's own definitions."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from gen_cupti_tables import render

from gtop.collectors import cupti_records as rec
from gtop.collectors.cupti_tables import RECORD_SIZES

STRUCTS = {
    rec.CONCURRENT_KERNEL: "activity_kernel10_dtype",
    rec.MEMCPY: "activity_memcpy6_dtype",
    rec.MEMSET: "activity_memset4_dtype",
    rec.RUNTIME: "activity_api_dtype",
    rec.SYNCHRONIZATION: "activity_synchronization2_dtype",
    rec.MARKER: "activity_marker2_dtype",
    rec.OVERHEAD: "activity_overhead3_dtype",
}
RENAMED = {
    "registers": "registers_per_thread",
    "object_pid": "object_id",
    "object_tid": "object_id",
    "flags": "flags_",
}
INCLUDE = Path("/usr/local/cuda-13.0/include")


@pytest.mark.parametrize("kind", sorted(STRUCTS))
def test_offsets_match_cupti_python(kind):
    cupti = pytest.importorskip("cupti.cupti")
    theirs = getattr(cupti, STRUCTS[kind])
    assert theirs.itemsize == RECORD_SIZES[kind]
    for name, (fmt, offset) in rec.FIELDS[kind].items():
        their_name = RENAMED.get(name, name)
        their_offset = theirs.fields[their_name][1]
        if name == "object_tid":
            their_offset += 4  # CUpti_ActivityObjectKindId.pt: {processId, threadId}
        assert offset == their_offset, name
        if their_name != "object_id":
            assert theirs.fields[their_name][0].itemsize >= __import__("numpy").dtype(fmt).itemsize


@pytest.mark.skipif(
    not (INCLUDE / "cupti_activity.h").exists() or shutil.which("gcc") is None,
    reason="needs the CUDA 13.0 CUPTI headers and gcc",
)
def test_generated_tables_match_headers():
    committed = Path(rec.__file__).with_name("cupti_tables.py").read_text()
    import subprocess

    generated = subprocess.run(
        ["ruff", "format", "-"],
        input=render(INCLUDE),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert generated == committed
