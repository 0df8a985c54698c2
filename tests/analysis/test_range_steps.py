"""Steps from NVTX ranges (:mod:`gtop.analysis.diagnosis.range_steps`): the names."""

from __future__ import annotations

import pytest

from gtop.analysis.diagnosis.range_steps import range_names, step_name
from gtop.core.hub import Entity


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("ProfilerStep#12", "ProfilerStep#N"),
        ("ProfilerStep#7", "ProfilerStep#N"),
        ("train_step", "train_step"),
        ("step 3", "step N"),
        ("layer2.block10", "layer2.blockN"),  # only the trailing number is the index
        ("", ""),
    ],
)
def test_a_step_index_is_dropped_from_the_name(name: str, key: str) -> None:
    assert step_name(name) == key


def test_range_names_are_the_marker_name_entities() -> None:
    entities = [
        Entity("marker_name", "5", 0, {"name": "train_step", "pid": 1}),
        Entity("kernel_name", "6", 0, {"name": "sgemm", "pid": 1}),
        Entity("marker_name", "7", 0, {"name": "ProfilerStep#3", "pid": 1}),
    ]
    assert range_names(entities) == {5: "train_step", 7: "ProfilerStep#3"}
