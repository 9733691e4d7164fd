"""Framework vocabularies: the names each framework gives its work, as plain tables.

The lowest layer: modules here import nothing from stepscope, so capture, import and
analysis all read the same tables (one module per subject or framework).
"""
