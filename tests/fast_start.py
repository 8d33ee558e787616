"""An early pytest plugin (`-p tests.fast_start`, passed by the Makefile's test targets) that spares
every pytest process (the main one and each xdist worker) about 1.5 s of start-up.

nbval imports nbformat, which imports jsonschema, whose format checkers import the optional
`rfc3987_syntax` if it is installed; that module compiles a lark grammar at import (~1.5 s here).
It only checks the "iri" and "iri-reference" string formats, which the notebook schema never uses,
and nbformat validates without a format checker, so nothing of ours needs it. A None entry in
sys.modules makes its import raise ImportError (Python's documented way to block a module), and
jsonschema then leaves those two formats unchecked, as it does when the package is absent.
This must run before nbval is loaded, hence `-p` rather than conftest.py (loaded after the plugins).

It also turns Python's cyclic garbage collector off until the tests are collected: importing torch,
matplotlib and the test files makes objects that live for the whole run, and a worker's ~700
collections while they were made (six of them full) took ~0.5 s of its start. conftest.py's
pytest_collection_finish freezes what was made and turns the collector on again; xdist's
controller, which collects nothing, turns it on at configure.
"""
import gc
import sys

sys.modules.setdefault("rfc3987_syntax", None)
gc.disable()
