"""The agent interface: `stepscope mcp LOGDIR`, a Model Context Protocol server over stdio
whose tools are stepscope's capabilities (docs/agents.md). Needs the `agent` extra."""
