"""``gtop probe list | instrument`` through its own argparse wiring."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from gtop.probes import command as cli
from gtop.probes import options
from gtop.probes.engine.rewrite import read_header

from .helpers import CORPUS, run_ptxas


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="gtop probe")
    options.add_arguments(parser)
    return cli.run(parser.parse_args(argv))


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["list"]) == 0
    out = capsys.readouterr().out
    for name in ("block_sched", "tensorop", "mem_trace"):
        assert name in out
    # block_sched packs its array-map record into 16 bytes; the ring keeps all 32
    block_sched = next(line for line in out.splitlines() if line.startswith("block_sched"))
    assert block_sched.split()[2:4] == ["array,ring", "16,32"]


def test_instrument_lists_the_device_functions_it_probed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = CORPUS / "nvcc_cuda_funcs.ptx"
    out = tmp_path / "out.ptx"
    assert _run(["instrument", str(src), "--probe", "mem_trace", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    header = read_header(out.read_text())
    assert header is not None and header.get("functions")
    for f in header["functions"]:
        assert f"{f['name']} (.func): " in printed


def test_instrument_writes_assemblable_self_describing_ptx(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.ptx"
    src = CORPUS / "nvcc_cuda_kernels.ptx"
    argv = ["instrument", str(src), "--probe", "mem_trace", "--kernel", "^sax", "--sample", "8"]
    assert _run([*argv, "-o", str(out)]) == 0
    assert "saxpy: entry 1, access 3" in capsys.readouterr().out
    header = read_header(out.read_text())
    assert header is not None
    assert header["sample"] == 8 and [k["name"] for k in header["kernels"]] == ["saxpy"]
    assert header["record_size"] == 32
    assert run_ptxas(out.read_text(), tmp_path).returncode == 0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--probe", "nope"], "unknown probe 'nope' (probes: block_sched, mem_trace, tensorop)"),
        (["--probe", "block_sched", "--kernel", "zzz"], "no kernel matches 'zzz'"),
        (["--probe", "block_sched", "--sample", "4"], "takes no sampling rate 4"),
        (["--probe", "mem_trace", "--map", "array"], "supports maps ['ring']"),
    ],
)
def test_errors_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    src = CORPUS / "triton_softmax.ptx"
    assert _run(["instrument", str(src), *extra, "-o", str(tmp_path / "o.ptx")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("gtop: probe: ")
    assert message in err
    assert not (tmp_path / "o.ptx").exists()


def test_refuses_non_ptx_with_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = CORPUS / "cuda_kernels.cu"
    assert _run(["instrument", str(src), "--probe", "tensorop", "-o", str(tmp_path / "o")]) == 1
    assert "line 4: unexpected '#include' at module scope" in capsys.readouterr().err


def test_refuses_instrumented_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    once = tmp_path / "once.ptx"
    src = str(CORPUS / "triton_softmax.ptx")
    assert _run(["instrument", src, "--probe", "block_sched", "-o", str(once)]) == 0
    again = ["instrument", str(once), "--probe", "tensorop", "-o", str(tmp_path / "x")]
    assert _run(again) == 1
    assert "already instrumented" in capsys.readouterr().err
