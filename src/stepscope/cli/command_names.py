"""The sub-commands' module names, one module each under `stepscope.cli.commands`.

Their own module so that `cli.main` (which checks a command name before any parser exists)
and `cli.parser` (which registers each command's parser) both read it without importing
each other.
"""

COMMANDS = (
    "cache",
    "capture",
    "demo",
    "diff",
    "doctor",
    "export",
    "import_",
    "info",
    "mcp",
    "query",
    "report",
    "runs",
    "serve",
    "server",
    "summary",
    "tool",
)
