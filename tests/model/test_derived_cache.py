"""Values derived from a profile are cached on the profile itself, not in module memos."""

from __future__ import annotations

from stepscope.model import load_profile
from stepscope.stats.events import classify_events
from tests.support.fixtures import tf_xplane


def test_event_types_are_computed_once_per_profile_and_freed_with_it() -> None:
    first, second = load_profile(tf_xplane("ctl")), load_profile(tf_xplane("ctl"))
    types = classify_events(first)
    assert classify_events(first) is types  # cached on the profile
    assert classify_events(second) is not types  # another profile: its own value
    assert not types.flags.writeable  # shared: callers cannot modify it
    calls = []
    assert first.derived("k", lambda: calls.append(1) or 7) == 7
    assert first.derived("k", lambda: calls.append(1) or 8) == 7 and calls == [1]
