"""The package version, importable without importing the package's public API."""

__version__ = "0.1.0"
