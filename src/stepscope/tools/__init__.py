"""One module per tool; each declares ``TOOL = ToolSpec(...)`` (see registry.py)."""
