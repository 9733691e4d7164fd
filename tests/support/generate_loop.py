"""A ``generate()`` loop as stepscope's capture records it (decision 560): each call marked
``GenerationMixin.generate``, torch's ops inside, and Hugging Face's Python between them
untraced."""

from __future__ import annotations

from stepscope.vocab.serving import HF_GENERATE_EVENT
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS

CALLS = 4
CALL_MS = 10  # each call: 3 ms of ops, 7 ms of untraced Python


def generate_loop() -> XSpaceBuilder:
    builder = XSpaceBuilder("torch")
    main = builder.plane("/host:CPU").line(1, "MainThread")
    for k in range(CALLS):
        t0 = k * 12 * MS
        main.event(HF_GENERATE_EVENT, t0, CALL_MS * MS, {"model": "GPT2LMHeadModel"})
        main.event("aten::linear", t0 + 2 * MS, 2 * MS)
        main.event("aten::add", t0 + 6 * MS, MS)
    return builder
