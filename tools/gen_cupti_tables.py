"""Regenerate :mod:`gtop.cupti.tables` from a CUDA toolkit's CUPTI headers.

Run ``python tools/gen_cupti_tables.py /usr/local/cuda-13.0/include`` (needs gcc);
``test_cupti_tables.py`` checks that the committed module matches the headers.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "gtop" / "cupti" / "tables.py"


def kind_structs(include: Path) -> list[tuple[int, str, str]]:
    """(kind value, kind name, record struct) for every activity kind with a struct."""
    text = (include / "cupti_activity.h").read_text()
    body = text[: text.index("} CUpti_ActivityKind;")]
    body = body[body.rindex("typedef enum {") :]
    out = []
    for m in re.finditer(r"/\*\*(.*?)\*/\s*CUPTI_ACTIVITY_KIND_(\w+)\s*=\s*(\d+)", body, re.S):
        doc, name, value = m.groups()
        struct = re.search(r"\\ref\s+(CUpti_Activity\w+)", doc.replace("*", " "))
        if struct:
            out.append((int(value), name, struct.group(1)))
    return out


def record_sizes(include: Path) -> dict[int, int]:
    """sizeof() of each kind's record struct, compiled with gcc against ``include``."""
    kinds = kind_structs(include)
    lines = ["#include <stdio.h>", "#include <cupti.h>", "int main(void) {"]
    lines += [f'  printf("%d %zu\\n", {v}, sizeof({s}));' for v, _, s in kinds]
    lines += ["  return 0;", "}"]
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = Path(tmp, "sz.c"), Path(tmp, "sz")
        src.write_text("\n".join(lines))
        subprocess.run(["gcc", f"-I{include}", str(src), "-o", str(exe)], check=True)
        res = subprocess.run([str(exe)], check=True, capture_output=True, text=True)
    return {int(a): int(b) for a, b in (ln.split() for ln in res.stdout.splitlines())}


def cbid_names(include: Path, header: str, prefix: str) -> dict[int, str]:
    text = (include / header).read_text()
    names = {}
    for name, value in re.findall(rf"{prefix}_(\w+)\s*=\s*(\d+)", text):
        if name not in ("INVALID", "SIZE", "FORCE_INT"):
            names[int(value)] = re.sub(r"_v\d+$", "", name)
    return names


def render(include: Path) -> str:
    version = re.search(
        r"#define CUPTI_API_VERSION (\d+)", (include / "cupti_version.h").read_text()
    ).group(1)
    kinds = {v: n for v, n, _ in kind_structs(include)}
    sizes = record_sizes(include)
    runtime = cbid_names(include, "cupti_runtime_cbid.h", "CUPTI_RUNTIME_TRACE_CBID")
    driver = cbid_names(include, "cupti_driver_cbid.h", "CUPTI_DRIVER_TRACE_CBID")

    def table(d: dict[int, object]) -> str:
        return "{\n" + "".join(f"    {k}: {v!r},\n" for k, v in sorted(d.items())) + "}"

    return (
        f'"""CUPTI tables generated from the CUPTI {version} headers (do not edit).\n\n'
        "Regenerate with ``python tools/gen_cupti_tables.py INCLUDE_DIR``.\n"
        '"""\n\n'
        f"CUPTI_API_VERSION = {version}\n\n"
        f"KIND_NAMES: dict[int, str] = {table(kinds)}\n\n"
        f'RECORD_SIZES: dict[int, int] = {table(sizes)}\n"""Bytes per record of each kind."""\n\n'
        f"RUNTIME_CBIDS: dict[int, str] = {table(runtime)}\n\n"
        f"DRIVER_CBIDS: dict[int, str] = {table(driver)}\n"
    )


if __name__ == "__main__":
    OUT.write_text(render(Path(sys.argv[1])))
