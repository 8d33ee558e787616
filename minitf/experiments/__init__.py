"""Stored benchmark results and their readers: rows, readable tables and figures for the
notebooks. Imports the core only."""
