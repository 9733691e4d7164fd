"""Shared intermediates computed once per (run, host) and reused by many tools."""
