"""The bench studies' resumable result store: one JSON document per study, written atomically after
every run, in which a run counts as done only if its spec is unchanged.

A study gives each run its spec, everything that decides the result (the arm's config and training
settings, the seed, the budget), and a readable key where its table is a dict ("d8/seed0"). The
record keeps a hash of the spec (`spec_sha`): resuming skips a run whose record holds the same hash,
and a run whose arm has changed since is trained again, never silently kept. A record stored before
the hash was kept is recognised by `legacy`, the spec read back from its own fields.

`--out` means one thing in every study: the folder that receives `<study>.json` and `<study>.md`
(default minitf/experiments/stored). A `--quick` smoke run goes to /tmp/minitf-bench-<study>
unless --out is given, and starts afresh.
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from minitf.core.files import atomic_write  # noqa: E402

STORED = ROOT / "minitf" / "experiments" / "stored"
SPEC = "spec_sha"  # the record's field holding its spec's hash


def spec_hash(spec) -> str:
    """A short hash of a spec (any JSON-able value); dict order and tuple-vs-list do not matter."""
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def config_spec(config) -> dict:
    """A Config in a spec: only its fields that differ from Config()'s, so a field added to Config
    later (at its default, the same model) changes no spec and re-runs nothing."""
    from minitf import Config
    default = Config().to_dict()
    return {k: v for k, v in config.to_dict().items() if k not in default or default[k] != v}


def out_folder(study: str, out: Path | None, quick: bool) -> Path:
    """Where a study writes: --out, else /tmp/minitf-bench-<study> for --quick, else the stored folder."""
    folder = Path(out) if out else Path(f"/tmp/minitf-bench-{study}") if quick else STORED
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def add_study_arguments(parser, study: str,
                        quick_help: str = "a smoke run: few steps and pairs, one seed") -> None:
    """`--quick` and `--out`, with the one meaning this module's docstring gives them."""
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--out", type=Path, default=None,
                        help=f"the folder for {study}.json and .md (default minitf/experiments/stored, "
                        f"/tmp/minitf-bench-{study} with --quick)")


def open_study(study: str, args) -> "Store":
    """The study's store where `--out` and `--quick` put it; a --quick run starts afresh."""
    return Store(out_folder(study, args.out, args.quick), study, fresh=args.quick)


def write_text(path: Path, text: str) -> None:
    """Replace a file atomically: an interrupted write leaves the old one whole."""
    atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"), overwrite=True)


class Store:
    """`<folder>/<study>.json` as a dict (`doc`), resumable run by run; fresh=True ignores a stored one."""

    def __init__(self, folder: Path, study: str, *, fresh: bool = False):
        self.path = Path(folder) / f"{study}.json"
        self.markdown_path = self.path.with_suffix(".md")
        self.doc = json.loads(self.path.read_text(encoding="utf-8")) if self.path.exists() and not fresh else {}

    def save(self, markdown: str | None = None) -> None:
        """Write the json (and the report beside it, if given), each atomically."""
        write_text(self.path, json.dumps(self.doc, indent=1, ensure_ascii=False) + "\n")
        if markdown is not None:
            write_text(self.markdown_path, markdown.rstrip("\n") + "\n")

    @staticmethod
    def find(table: dict | list, spec, key: str | None = None,
             legacy: Callable[[dict], object] | None = None) -> dict | None:
        """The record of a finished run of `spec`: table[key] for a dict with a key, else any record
        of the table (a run stored under another name is the same run)."""
        wanted = spec_hash(spec)
        if isinstance(table, dict):
            records = [table.get(key)] if key is not None else list(table.values())
        else:
            records = list(table)
        for record in records:
            if record is None:
                continue
            if record.get(SPEC) == wanted:
                return record
            if SPEC not in record and legacy is not None and spec_hash(legacy(record)) == wanted:
                record[SPEC] = wanted  # recognised: from now on found by its hash
                return record
        return None

    def run(self, table: dict | list, spec, compute: Callable[[], dict], *, key: str | None = None,
            legacy: Callable[[dict], object] | None = None,
            replaces: Callable[[dict], bool] | None = None,
            markdown: Callable[[], str] | None = None) -> tuple[dict, bool]:
        """(the record of `spec`, whether it was computed now). A done run is returned as stored;
        otherwise compute() runs, its record (with the spec's hash) goes into the table, at `key`
        for a dict (replacing a changed run there), appended to a list after dropping the records
        `replaces` picks out (the same slot under an older spec), and the store is saved."""
        found = self.find(table, spec, key, legacy)
        if found is not None:
            return found, False
        record = {**compute(), SPEC: spec_hash(spec)}
        if isinstance(table, dict):
            table[key] = record
        else:
            table[:] = [r for r in table if not (replaces and replaces(r))] + [record]
        self.save(markdown() if markdown else None)
        return record, True
