"""Helpers shared by tests of several folders: import them from here, never from a test
module or a conftest."""
