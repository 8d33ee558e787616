"""`data check` and `data make`: pairs files checked line by line, and made (streamed to the file,
with a progress bar and a limit on their size)."""
from __future__ import annotations

import math
import sys

from ..core.data import iter_pairs, read_pairs, write_pairs
from ..core.words import plural
from .messages import fail


def cmd_data_check(args) -> int:
    bad = 0
    for path in args.files:
        report = read_pairs(path, strict=False, max_len=args.max_len).report
        for line, reason in report.skipped:
            print(f"{path}:{line}: {reason}")
        print(report)
        bad += len(report.skipped)
    return 1 if bad else 0


MAX_PAIRS = 10_000_000  # data make's limit: beyond it, the inputs kept distinct outgrow memory
PROGRESS_FROM = 100_000  # data make shows a progress bar from this many pairs (about a second)


def make_estimate(n: int, min_len: int, max_len: int) -> str:
    """What `data make` of n pairs would cost: file size, memory, time (measured rates)."""
    lengths = range(min_len, max_len + 1)
    line = sum(4 * math.ceil((2 * k + 1) / 3) + 1 for k in lengths) / len(lengths)  # Base64 + \n
    memory = sum(100 + k for k in lengths) / len(lengths)  # an input kept in a set: ~100 B + bytes
    seconds = n * 5e-6  # 4-6 µs a pair, measured on the course's busy 2-core CPU (10M: 40 s, 1 GB)
    return (f"about {n * line / 1e9:.1f} GB of file, {n * memory / 1e9:.1f} GB of memory (every "
            f"input is kept to make them distinct) and {plural(round(seconds / 60), 'minute')}")


def cmd_data_make(args) -> int:
    if args.n > MAX_PAIRS:
        cost = make_estimate(args.n, args.min_len, args.max_len)
        return fail(f"--n {args.n:,} is more than data make makes at once ({MAX_PAIRS:,} "
                    f"pairs): it would take {cost}. A model trains on far fewer (the course's: "
                    "20,000 to 30,000)")
    exclude = [p.input for f in args.exclude for p in read_pairs(f)]
    pairs = iter_pairs(args.task, args.n, args.seed, min_len=args.min_len, max_len=args.max_len,
                       exclude=exclude, repeats=args.repeats)  # checked now, drawn while writing
    if args.n >= PROGRESS_FROM and not args.no_progress:
        from tqdm.auto import tqdm
        pairs = tqdm(pairs, total=args.n, desc="data make", unit=" pairs", unit_scale=True,
                     leave=False, mininterval=0.5)
    try:
        write_pairs(args.out, pairs, overwrite=args.force)  # streamed: no list of pairs in memory
    except KeyboardInterrupt:
        print(f"minitf: interrupted (Ctrl-C); {args.out} was not written (a pairs file is written "
              "whole or not at all)", file=sys.stderr)
        return 130
    print(f"wrote {plural(args.n, args.task + ' pair')} (seed {args.seed}) to {args.out}")
    return 0
