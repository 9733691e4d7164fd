"""Input-bound classification and XProf's other thresholds (stepscope.stats.advice)."""

from __future__ import annotations

import pytest

from stepscope.stats.advice import classify_input, level


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
