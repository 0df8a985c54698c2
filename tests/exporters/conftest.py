"""Exports of real recordings, made once per test module and format."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from gtop.cli import main
from tests.conftest import RECORDINGS

PROFILE_PROTO = Path("/usr/share/gocode/src/github.com/google/pprof/proto/profile.proto")
"""From Debian's golang-github-google-pprof-dev (installed by .ci/run)."""
SLOW_LOADER = RECORDINGS / "slow_loader.gtop"
"""A torch training loop with a slow DataLoader on an H100: CUPTI kernels, copies and
API calls, 30 host threads with states and stacks, worker processes."""


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """``export(fmt, recording=SLOW_LOADER, name=...)``: the path written (cached)."""
    made: dict[tuple, Path] = {}

    def run(fmt: str, recording: Path = SLOW_LOADER, name: str = "out") -> Path:
        key = (fmt, recording, name)
        if key not in made:
            out = tmp_path_factory.mktemp(fmt) / name
            assert main(["export", str(recording), "--format", fmt, "-o", str(out)]) == 0
            made[key] = out
        return made[key]

    return run


def compile_profile_proto(out: Path) -> ModuleType:
    """pprof's ``profile.proto`` (Debian's copy) compiled into ``out`` by grpcio-tools'
    protoc, imported."""
    from grpc_tools import protoc

    args = ["protoc", f"-I{PROFILE_PROTO.parent}", f"--python_out={out}", str(PROFILE_PROTO)]
    assert protoc.main(args) == 0
    sys.path.insert(0, str(out))
    try:
        return importlib.import_module("profile_pb2")
    finally:
        sys.path.remove(str(out))


@pytest.fixture(scope="module")
def profile_pb2(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return compile_profile_proto(tmp_path_factory.mktemp("proto"))
