"""Pilot tests (80x24) of the kernel table and API table (the stream timeline:
test_busy_cells.py)."""

from __future__ import annotations

import asyncio

from textual.app import App, ComposeResult

from gtop.analysis.kernels.cuda_activity import api_summary, kernel_summary
from gtop.core import layouts
from gtop.core.layouts import ApiClass
from gtop.views.widgets.api_table import ApiTable
from gtop.views.widgets.kernel_table import KernelTable
from gtop.views.widgets.row_table import RowTable

NAMES = {
    1: "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEE"
    "viT0_T1_",
    2: "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn",
    3: "triton_poi_fused_add_0",
}


def kernel_rows():
    k = layouts.KERNEL.empty(6)
    k["name_id"] = [1, 1, 1, 2, 2, 3]
    k["t_ns"] = 0
    k["end_ns"] = [10, 10, 10, 500, 700, 5]
    k["stream"], k["grid_x"], k["block_x"] = 7, 64, 256
    return kernel_summary(k, NAMES)


class One(App):
    def __init__(self, widget) -> None:
        super().__init__()
        self.widget = widget

    def compose(self) -> ComposeResult:
        yield self.widget


def names_on_screen(table: KernelTable) -> list[str]:
    return [r.short for r in table.shown]


def test_kernel_table_sorts_filters_and_expands():
    asyncio.run(_kernel_table_sorts_filters_and_expands())


async def _kernel_table_sorts_filters_and_expands():
    table = KernelTable()
    async with One(table).run_test(size=(80, 24)) as pilot:
        table.set_rows(kernel_rows())
        data = table.query_one(RowTable)
        data.focus()
        await pilot.pause()
        assert data.row_count == 3
        assert names_on_screen(table)[0].startswith("ampere_bf16")  # by total time
        await pilot.press("s")  # count
        assert names_on_screen(table)[0] == "native::vectorized_elementwise_kernel<…>"
        await pilot.press("r")
        assert names_on_screen(table)[0] == "triton_poi_fused_add_0"
        await pilot.press("f")
        assert data.cells(2)[0].startswith("void at::native::vectorized_elementwise")
        await pilot.press("slash")
        await pilot.press(*"triton")
        assert names_on_screen(table) == ["triton_poi_fused_add_0"]
        await pilot.press("escape")
        assert data.row_count == 3


def test_kernel_table_posts_selection():
    asyncio.run(_kernel_table_posts_selection())


async def _kernel_table_posts_selection():
    table = KernelTable()
    picked = []

    class Watch(One):
        def on_kernel_table_selected(self, message: KernelTable.Selected) -> None:
            picked.append(message.row.name)

    async with Watch(table).run_test(size=(80, 24)) as pilot:
        table.set_rows(kernel_rows())
        await pilot.pause()
        table.query_one(RowTable).focus()
        await pilot.press("enter")
        await pilot.pause()
    assert picked == [NAMES[2]]


def api_rows():
    a = layouts.API.empty(3)
    a["t_ns"], a["end_ns"] = [0, 10, 0], [5, 15, 1_000_000_000]
    a["pid"], a["tid"], a["domain"] = 1, [100, 100, 200], 0
    a["cbid"] = [211, 211, 165]
    a["api_class"] = [ApiClass.LAUNCH, ApiClass.LAUNCH, ApiClass.SYNC]
    return api_summary(a)


def test_api_table_rows_and_sort():
    asyncio.run(_api_table_rows_and_sort())


async def _api_table_rows_and_sort():
    table = ApiTable()
    async with One(table).run_test(size=(80, 24)) as pilot:
        table.set_rows(api_rows())
        table.query_one(RowTable).focus()
        await pilot.pause()
        assert [r.name for r in table.shown] == ["cudaDeviceSynchronize", "cudaLaunchKernel"]
        await pilot.press("s")  # calls
        assert table.shown[0].name == "cudaLaunchKernel"
        row = table.query_one(RowTable).cells(0)
        assert row[0] == "100" and row[3] == "2/s"


def test_api_table_explains_an_empty_table():
    asyncio.run(_api_table_explains_an_empty_table())


async def _api_table_explains_an_empty_table():
    table = ApiTable()
    async with One(table).run_test(size=(80, 24)):
        assert "full mode" in str(table.border_subtitle)
