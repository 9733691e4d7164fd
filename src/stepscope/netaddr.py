"""Whether a host name or address is this machine: the one test the web server (its
loopback-only defaults, uncompressed answers to a local page) and the remote profiler
server (its warning when bound elsewhere) both make."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """``host`` (a name or an address, IPv6 with or without brackets) is this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
