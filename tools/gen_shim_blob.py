"""Rebuild the C blobs gtop ships (needs gcc, x86-64): :mod:`gtop.agent.shim_blob` from
gtop/agent/cupti_shim.c (the agent's CUPTI buffer shim) and
:mod:`gtop.analysis.loops_blob` from gtop/analysis/loops.c (a report's hot loops).

``python tools/gen_shim_blob.py``; ``tests/agent/test_shim.py`` and
``tests/analysis/test_compiled.py`` check that each committed blob is byte for byte what
its source builds to.
"""

from __future__ import annotations

import base64
import subprocess
import tempfile
import textwrap
from pathlib import Path
from typing import NamedTuple

GTOP = Path(__file__).resolve().parents[1] / "gtop"


class Blob(NamedTuple):
    """A C source, the module its build is committed as, and its names there."""

    source: Path
    module: Path
    name: str
    """``<NAME>_B64`` holds the base64 text, ``<name>_bytes()`` returns the bytes."""
    libs: tuple[str, ...] = ()


SHIM = Blob(
    GTOP / "agent" / "cupti_shim.c", GTOP / "agent" / "shim_blob.py", "shim", ("-lpthread",)
)
LOOPS = Blob(GTOP / "analysis" / "loops.c", GTOP / "analysis" / "loops_blob.py", "loops")
BLOBS = (SHIM, LOOPS)


def build(blob: Blob = SHIM) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp, "blob.so")
        subprocess.run(
            [
                "gcc",
                "-O2",
                "-Wall",
                "-Wextra",
                "-shared",
                "-fPIC",
                "-s",
                "-o",
                str(out),
                str(blob.source),
                *blob.libs,
            ],
            check=True,
        )
        return out.read_bytes()


def render(data: bytes, blob: Blob = SHIM) -> str:
    body = "\n".join(f'    "{line}"' for line in textwrap.wrap(base64.b64encode(data).decode(), 88))
    return (
        f'"""{blob.source.name} built for x86-64 Linux (generated; do not edit).\n\n'
        "Regenerate with ``python tools/gen_shim_blob.py``.\n"
        '"""\n\n'
        "import base64\n\n"
        f'ARCH = "x86_64"\n'
        f"{blob.name.upper()}_B64 = (\n{body}\n)\n\n\n"
        f"def {blob.name}_bytes() -> bytes:\n"
        f"    return base64.b64decode({blob.name.upper()}_B64)\n"
    )


if __name__ == "__main__":
    for each in BLOBS:
        each.module.write_text(render(build(each), each))
