"""Host, GPU and multi-GPU diagnostics: findings with evidence and a concrete fix.

- `base`: the types every check shares (`Finding`, `EventEvidence`, `HostData`, severity);
- `host_steps`, `host`, `device`, `streams`, `multi`: the checks, by family;
- `checks`: the one list of checks (id, description, function);
- `runner`: runs them on a host or a run, most severe first.
"""
