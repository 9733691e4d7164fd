"""Counts of steps in a user's words, for every layer (decision 611).

A one-step profile (vLLM's one engine step, the pod_kineto run of two one-step traces) read
"13334.78 ms per step in 1 of 1 steps", "late at 1 of 1 steps", "wrote ...: 1 steps of run":
a count is "1 step", and a share of a single step is that step, not "1 of 1".
"""

from __future__ import annotations


def counted(n: int, noun: str = "step") -> str:
    """ "1 step", "3 steps" (``noun`` takes an "s" in the plural)."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def of_steps(k: int, n: int, one: str = "the one step") -> str:
    """ "k of n steps"; ``one`` where there is a single step (k is then 1)."""
    return one if n == 1 else f"{k} of {n} steps"
