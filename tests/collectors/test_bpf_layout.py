"""The BPF tier's numpy/ctypes mirrors of offcpu.h match the structs in the shipped BPF
object, field by field (name, offset, size, signedness), read from the object's own BTF
with bpftool. (``tests/host/test_host_bpf_build.py`` checks the object is what the
source builds to.)"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from gtop.collectors.threads import bpf

OBJECT = Path(bpf.__file__).parent / "ebpf" / "offcpu.bpf.o"
MIRRORED = ("switch_event", "sample_event", "thread_state")
"""The structs of offcpu.h that user space reads or writes."""


Field = tuple[str, int, int, bool]
"""(name, byte offset, bytes, signed)"""


def _btf_structs() -> dict[str, tuple[int, list[Field]]]:
    """``{struct: (size, fields)}`` from the object's BTF."""
    out = subprocess.run(
        ["bpftool", "-j", "btf", "dump", "file", str(OBJECT), "format", "raw"],
        capture_output=True,
        text=True,
        check=True,
    )
    types = {t["id"]: t for t in json.loads(out.stdout)["types"]}

    def resolve(type_id: int) -> dict:
        t = types[type_id]
        while t["kind"] in ("TYPEDEF", "VOLATILE", "CONST"):
            t = types[t["type_id"]]
        return t

    structs = {}
    for t in types.values():
        if t["kind"] == "STRUCT" and t.get("name") in MIRRORED:
            fields = []
            for m in t["members"]:
                base = resolve(m["type_id"])
                assert base["kind"] == "INT", (t["name"], m["name"], base)
                fields.append(
                    (m["name"], m["bits_offset"] // 8, base["size"], base["encoding"] == "SIGNED")
                )
            structs[t["name"]] = (t["size"], fields)
    return structs


def _dtype_fields(dtype: np.dtype) -> list[tuple[str, int, int, bool]]:
    return [
        (
            name,
            dtype.fields[name][1],
            dtype.fields[name][0].itemsize,
            dtype.fields[name][0].kind == "i",
        )
        for name in dtype.names
    ]


@pytest.mark.parametrize(
    ("struct", "dtype"),
    [
        ("switch_event", bpf.SWITCH_EVENT),
        ("sample_event", bpf.SAMPLE_EVENT),
        ("thread_state", np.dtype(bpf._STATE_FIELDS)),
    ],
)
def test_mirror_matches_the_object(struct: str, dtype: np.dtype) -> None:
    size, fields = _btf_structs()[struct]
    assert _dtype_fields(dtype) == fields
    assert dtype.itemsize == size


def test_ctypes_state_has_the_struct_size() -> None:
    """The map value written from Python (seeded threads) is exactly ``thread_state``."""
    import ctypes

    size, _ = _btf_structs()["thread_state"]
    assert ctypes.sizeof(bpf._State) == size


def test_the_objects_globals_read_as_pyelftools_reads_them() -> None:
    """:func:`object_globals` (struct, not pyelftools, on the tracer's start) finds every
    global variable of the shipped object where pyelftools does."""
    from elftools.elf.elffile import ELFFile

    from gtop.collectors.threads.ebpf.libbpf import object_globals

    with OBJECT.open("rb") as f:
        elf = ELFFile(f)
        sections = [s.name for s in elf.iter_sections()]
        expected = {
            sym.name: (sections[sym["st_shndx"]], sym["st_value"], sym["st_size"])
            for sym in elf.get_section_by_name(".symtab").iter_symbols()
            if sym["st_info"]["type"] == "STT_OBJECT" and isinstance(sym["st_shndx"], int)
        }
    found = object_globals(str(OBJECT))
    assert found == expected
    assert {"nr_cpus", "user_stacks", "io_syscall", "switch_head"} <= set(found)
