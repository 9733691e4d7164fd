"""Match keys survive the renames users cannot control (docs/tools/diff.md)."""

from __future__ import annotations

import pytest

from stepscope.stats.compare import match_key


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("ProfilerStep#3", "ProfilerStep#117"),
        (
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
            "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
        ),
        ("fusion.12", "fusion.13"),
        ("%fusion.12", "fusion.7"),
        ("loop_fusion.2/add.3:Add", "loop_fusion.9/add.14:Add"),
        ("void gemm<float, 128, 4, (bool)1>(Params)", "void gemm<float, 64, 8, (bool)0>(Params)"),
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>"
            "(int, at::native::FillFunctor<float>)",
            "void at::native::vectorized_elementwise_kernel<8, at::native::FillFunctor<float>>"
            "(int, at::native::FillFunctor<float>)",
        ),
        (
            "<built-in method to of Tensor object at 0x7f00ab>",
            "<built-in method to of Tensor object at 0x55aa>",
        ),
    ],
)
def test_renames_match(a: str, b: str) -> None:
    assert match_key(a) == match_key(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("void gemm<float, 128>(Params)", "void gemm<half, 128>(Params)"),  # types stay
        ("model/conv2d_1/Conv2D:Conv2D", "model/conv2d_2/Conv2D:Conv2D"),  # layer names stay
        ("fusion.12", "copy.12"),
        ("Iterator::Root::Map", "Iterator::Root::ParallelMapV2"),
        ("ProfilerStep#3", "aten::mm"),
        ("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "aten::mm"),
    ],
)
def test_different_work_does_not_match(a: str, b: str) -> None:
    assert match_key(a) != match_key(b)


def test_names_without_renames_are_kept() -> None:
    for name in (
        "aten::add_",
        "file.py(12): fn",
        "<built-in method add>",
        "ampere_sgemm_128x64_tn",
    ):
        assert match_key(name) == name
