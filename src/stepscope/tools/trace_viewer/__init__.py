"""The trace viewer: every event on a timeline, served window by window.

- `tool`: the tool's declaration (`TOOL`) and its first answer (tracks, steps, counters);
- `api`: the follow-up endpoints (window, search, event, select) on the trace index;
- `wire`: the binary format of window answers, read by the web UI;
- `chrome_trace`: the whole trace as Chrome trace JSON (`stepscope export`).
"""
