"""Rebuild :mod:`gtop.agent.shim_blob` from gtop/agent/cupti_shim.c (needs gcc, x86-64).

``python tools/gen_shim_blob.py``; ``tests/agent/test_shim.py`` checks that the committed
blob is byte for byte what the source builds to.
"""

from __future__ import annotations

import base64
import subprocess
import tempfile
import textwrap
from pathlib import Path

AGENT = Path(__file__).resolve().parents[1] / "gtop" / "agent"


def build() -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp, "shim.so")
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
                str(AGENT / "cupti_shim.c"),
                "-lpthread",
            ],
            check=True,
        )
        return out.read_bytes()


def render(blob: bytes) -> str:
    body = "\n".join(f'    "{line}"' for line in textwrap.wrap(base64.b64encode(blob).decode(), 88))
    return (
        '"""cupti_shim.c built for x86-64 Linux (generated; do not edit).\n\n'
        "Regenerate with ``python tools/gen_shim_blob.py``.\n"
        '"""\n\n'
        "import base64\n\n"
        f'ARCH = "x86_64"\n'
        f"SHIM_B64 = (\n{body}\n)\n\n\n"
        "def shim_bytes() -> bytes:\n"
        "    return base64.b64decode(SHIM_B64)\n"
    )


if __name__ == "__main__":
    (AGENT / "shim_blob.py").write_text(render(build()))
