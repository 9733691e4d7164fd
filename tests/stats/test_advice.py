"""Input-bound classification and XProf's other thresholds (stepscope.stats.advice)."""

from __future__ import annotations

import pytest

from stepscope.stats.advice import classify_input, level, limit_level


@pytest.mark.parametrize(
    ("input_pct", "other_pct", "expected"),
    [
        (20.0, 0.0, "high"),
        (19.99, 50.0, "moderate"),
        (5.0, 0.0, "moderate"),
        (4.99, 3.0, "potential"),
        (4.99, 2.99, "no"),
        (0.0, 0.0, "no"),
    ],
)
def test_input_classification_thresholds(input_pct: float, other_pct: float, expected: str) -> None:
    bound = classify_input(input_pct, other_pct)
    assert bound.classification == expected
    assert bound.percent == input_pct


def test_statements_name_the_share() -> None:
    assert "HIGHLY input-bound because 83.2%" in classify_input(83.216, 1.9).statement
    assert "14.9% of the total step time sampled is spent on 'All Others'" in (
        classify_input(2.6, 14.9).statement
    )
    assert classify_input(0, 0, has_steps=False).classification == "unknown"


@pytest.mark.parametrize(
    ("category", "low", "high"),
    [("output", 5, 20), ("kernel_launch", 3, 15), ("other", 3, 15), ("device_collectives", 3, 15)],
)
def test_other_thresholds(category: str, low: float, high: float) -> None:
    assert level(category, low - 0.01) == "no"
    assert level(category, low) == "moderate"
    assert level(category, high) == "high"


def test_every_classification_says_why_and_what_to_do() -> None:
    moderate = classify_input(7.25, 1.0).statement
    assert moderate.startswith("Your program is MODERATELY input-bound because 7.2% of")
    assert moderate.endswith("reduce both the input time and other time.")
    no = classify_input(2.0, 1.0)
    assert no.classification == "no" and no.statement.startswith(
        "Your program is NOT input-bound because only 2.0% of the total step time"
    )
    assert no.statement.endswith("focus on reducing other time.")
    unknown = classify_input(0, 0, has_steps=False)
    assert unknown.percent == 0.0 and unknown.statement.startswith("No step time measured")


def test_xprofs_four_sentences_word_for_word() -> None:
    """XProf's sentences, unchanged (``op_stats_to_input_pipeline_analysis.cc``), so that
    the line can be checked against XProf's own page."""
    assert [
        classify_input(pct, other).statement for pct, other in [(25, 0), (7.25, 0), (2, 4), (1, 1)]
    ] == [
        "Your program is HIGHLY input-bound because 25.0% of the total step time sampled is "
        "waiting for input. Therefore, you should first focus on reducing the input time.",
        "Your program is MODERATELY input-bound because 7.2% of the total step time sampled is "
        "waiting for input. Therefore, you would need to reduce both the input time and other "
        "time.",
        "Your program is POTENTIALLY input-bound because 4.0% of the total step time sampled "
        "is spent on 'All Others' time (which could be due to I/O or Python execution or "
        "both).",
        "Your program is NOT input-bound because only 1.0% of the total step time sampled is "
        "waiting for input. Therefore, you should focus on reducing other time.",
    ]
    assert classify_input(0, 0, has_steps=False).statement == (
        "No step time measured, so where the time goes in a step cannot be told."
    )


@pytest.mark.parametrize(
    ("limit", "moderate", "high"),
    [("input", 5, 20), ("dispatch", 3, 15), ("host", 3, 15), ("copies", 5, 20), ("waits", 3, 15)],
)
def test_limit_levels(limit: str, moderate: float, high: float) -> None:
    grades = [limit_level(limit, p) for p in (moderate - 0.01, moderate, high - 0.01, high)]
    assert grades == ["no", "moderate", "moderate", "high"]
