"""Thin command-line front end over the library."""
