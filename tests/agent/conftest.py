"""Fixtures for the agent tests: purpose-built targets, cleaned up even on failure."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_helpers import HERE, Received

from gtop.collectors.agent.link import AgentLink
from gtop.core.hub import Hub

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))  # the generators


@pytest.fixture(scope="session")
def fake_libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The fake libcupti and libcuda, built from fake_cupti.c (skips without gcc)."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the fake CUPTI")
    out = tmp_path_factory.mktemp("fake")
    src = str(HERE / "fake_cupti.c")
    cupti, cuda = str(out / "libfakecupti.so"), str(out / "libcuda.so.1")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", cupti, src, "-lpthread"], check=True)
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-DFAKE_CUDA", "-Wl,-soname,libcuda.so.1", "-o", cuda, src],
        check=True,
    )
    return {"GTOP_CUPTI_LIB": cupti, "FAKE_CUDA_LIB": cuda}


@pytest.fixture
def link_factory() -> Iterator:
    """Make started AgentLinks on fresh hubs; stopped at the end."""
    links: list[AgentLink] = []

    def make(**kwargs: object) -> tuple[AgentLink, Received]:
        hub = Hub()
        received = Received(hub.subscribe())
        link = AgentLink(hub, **kwargs).start()  # type: ignore[arg-type]
        links.append(link)
        return link, received

    yield make
    for link in links:
        link.stop()
