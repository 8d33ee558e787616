"""The commands that read a checkpoint: `eval` (scores on pairs or a text), `generate` (outputs
printed as they are made), `info` (what a checkpoint records, in words) and `doctor`."""
from __future__ import annotations

import codecs
import json
import math
import shlex
import sys
import textwrap

from ..core.checkpoint import load
from ..core.devices import pick_device
from ..core.evaluate import evaluate, exact_match_by_length
from ..core.bpe import BPE
from ..core.generate import (PAIRS_MAX_NEW, check_sampling, continue_ids, generate, generate_text,
                             pair_prompt, picker, seeded, text_prompt)
from ..core.model import count_parameters
from ..core.text import evaluate_text, read_text, text_baselines
from ..core.words import plural
from .inputs import model_kind, read_pairs_arg, warn_if_pairs_file
from .messages import fail, warn


def use_threads(args) -> None:
    """--threads for the command (1 by default): torch's default, a thread per core, makes these
    small models slower, and on a shared machine many times slower (3 of 9 runs 9x)."""
    import torch
    torch.set_num_threads(args.threads)


def tokenizer_of(model) -> BPE | None:
    """The BPE a language model was trained with (`train --tokenizer`), or None: bytes."""
    saved = model.metadata.get("tokenizer")
    return None if saved is None else BPE.from_dict(saved)


def cmd_eval(args) -> int:
    use_threads(args)
    model = load(args.checkpoint).to(pick_device(args.device))
    kind = model_kind(model)
    if args.text and kind == "pairs":
        return fail(f"{args.checkpoint} is a pairs model (trained on input TAB output pairs), and "
                    "--text scores a language model: give a pairs file instead "
                    f"(python -m minitf eval {shlex.quote(args.checkpoint)} FILE)")
    if args.data and kind == "text":
        return fail(f"{args.checkpoint} is a language model (trained with --text "
                    f"{model.metadata['text']}), and a pairs file scores a pairs model: give "
                    "--text FILE instead")
    if args.text:
        warn_if_pairs_file(args.text)
        context = args.context or model.metadata.get("context", model.config.max_len)
        tokenizer = tokenizer_of(model)
        text = read_text(args.text, context, max_len=model.config.max_len, tokenizer=tokenizer)
        metrics = evaluate_text(model, text.val)
        baselines = text_baselines(text if tokenizer is None else read_text(args.text, 1))
        tokens = ({} if tokenizer is None else
                  {"tokenizer": repr(tokenizer), "tokens": metrics["tokens"],
                   "bytes_per_token": round(metrics["bytes"] / metrics["tokens"], 4),
                   "nats_per_token": round(metrics["nats_per_token"], 4)})
        print(json.dumps({"split": "validation (last 10 %)", "bytes": metrics["bytes"], **tokens,
                          "loss": round(metrics["loss"], 4),
                          "bits_per_byte": round(metrics["bits_per_byte"], 4),
                          "baselines_bits_per_byte": {key: round(loss / math.log(2), 4) for key, loss
                                                      in zip(("uniform", "unigram", "bigram"),
                                                             (baselines.uniform, baselines.unigram,
                                                              baselines.bigram))}}))
        return 0
    if not args.data:
        return fail("eval needs a pairs file, or --text FILE for a language model")
    pairs = read_pairs_arg(args.data, args, max_len=model.config.max_len)
    metrics = {k: round(v, 4) for k, v in evaluate(model, pairs).items()}
    # a model right on the lengths it trained on and wrong beyond cannot hide that in the mean
    metrics["exact_match_by_length"] = {str(n): round(v, 4)
                                        for n, v in exact_match_by_length(model, pairs).items()}
    print(json.dumps(metrics))
    return 0


# check_sampling's messages on the command line name the flags
SAMPLING_FLAGS = {"temperature": "--temperature", "top_k": "--top-k", "top_p": "--top-p",
                  "greedy": "--greedy"}


# generate --max-new for a language model: at most this many bytes in one run. Measured here:
# about 900 bytes a second for lm.pt on one thread of the course's busy 2-core AMD EPYC.
MAX_NEW_TEXT = 20_000


def max_new_problem(max_new: int | None, model, lm: bool) -> str | None:
    """What is wrong with --max-new for this model, or None. A pairs model's sequence (input, TAB,
    output) ends at its max_len, so a longer output cannot come; a language model writes on
    without end, so a run is bounded where it would take minutes."""
    if max_new is None:
        return None
    if lm and max_new > MAX_NEW_TEXT:
        return (f"--max-new {max_new} is more than generate writes in one run ({MAX_NEW_TEXT:,} "
                "bytes, about 20 s at the 900 bytes a second measured on a busy 2-core AMD EPYC; "
                f"the model reads only its last {model.config.max_len} bytes, so a longer run "
                f"writes no better text): give --max-new {MAX_NEW_TEXT} or less, and continue "
                "from the end of the text")
    room = model.config.max_len - 2  # a one-byte input and its TAB
    if not lm and max_new > room:
        return (f"--max-new {max_new} is more than a pairs model can write: its sequence (input, "
                f"TAB, output) ends at max_len {model.config.max_len}, so an output has at most "
                f"{room} bytes; give --max-new {room} or less")
    return None


def cut_short(text: str, answer: bytes, model, max_new: int | None) -> str | None:
    """Why a pairs model's output ended without its end marker, or None when it ended on it: the
    sequence (input, TAB, output) reached the model's max_len, or the output reached --max-new."""
    room = model.config.max_len - len(pair_prompt(model, text))
    limit = PAIRS_MAX_NEW if max_new is None else max_new
    said = f"{text!r}: the output stopped after {plural(len(answer), 'byte')}, before its end marker"
    if len(answer) >= room and room <= limit:
        return (f"{said}, at the model's max_len {model.config.max_len} (input, TAB and output "
                "must fit in it): it may be cut short; a shorter input leaves more room")
    if len(answer) >= limit:
        given = "--max-new" if max_new is not None else "the default --max-new"
        return f"{said}, at {given} {limit}: it may go on (give --max-new up to {room})"
    return None


class Utf8Printer:
    """Bytes printed as UTF-8 text as they come: a character split over several bytes is printed
    once it is whole; a byte that can begin no character shows as \\xNN (a byte-level model may
    write any byte). A text that ends inside a character (cut by --max-new or max_len) is not
    shown as escapes: those bytes are held back, and `end` returns them."""

    def __init__(self, out):
        self.out = out
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="backslashreplace")

    def write(self, data: bytes) -> None:
        self.out.write(self.decoder.decode(data))

    def end(self) -> bytes:
        """End the text: the bytes of an unfinished last character, left out (b"" if none)."""
        pending = self.decoder.getstate()[0]
        self.decoder.reset()
        return pending


def held_back_note(pending: bytes) -> str:
    """What the note on stderr says of a text that ended inside a UTF-8 character."""
    return (f"the text ended inside a UTF-8 character: its first {plural(len(pending), 'byte')} "
            f"({pending.hex(' ')}) are left out, since they print as no character")


def cmd_generate(args) -> int:
    """Each input's output, printed as it is made: a language model's text byte by byte, a pairs
    model's outputs line by line. Every input is checked before anything is printed. Ctrl-C keeps
    what was printed, ends the line and exits 130. A pairs output that ends without its end
    marker (at max_len, or at --max-new) gets a warning on stderr; so does a text that ends inside
    a UTF-8 character, whose unfinished bytes are left out rather than shown as escapes."""
    use_threads(args)
    model = load(args.checkpoint).to(pick_device(args.device))
    lm = model_kind(model) == "text"  # a language model continues each prompt
    temperature = check_sampling(args.temperature, args.top_k, args.top_p, greedy=args.greedy,
                                 vocab_size=model.config.vocab_size, default=1.0 if lm else 0.0,
                                 names=SAMPLING_FLAGS)
    problem = max_new_problem(args.max_new, model, lm)
    if problem:
        return fail(problem)
    sampling = {"temperature": temperature, "top_k": args.top_k, "top_p": args.top_p,
                "seed": args.seed, "max_new": args.max_new}
    for text in args.text:  # all checked first: every input answered, or an error and no output
        if lm:
            text_prompt(text)
        else:
            pair_prompt(model, text)
    out = sys.stdout
    printer = Utf8Printer(out)
    written = 0

    def show(byte: int) -> None:
        nonlocal written
        printer.write(bytes([byte]))
        out.flush()
        written += 1

    tokenizer = tokenizer_of(model)
    if tokenizer is not None:  # a BPE model: prompt encoded, each new token shown as its bytes
        def show(token: int) -> None:
            nonlocal written
            printer.write(tokenizer.vocab[token])
            out.flush()
            written += len(tokenizer.vocab[token])

    def end_line() -> None:
        pending = printer.end()
        out.write("\n")
        out.flush()
        if pending:
            warn(held_back_note(pending))

    try:
        for text in args.text:
            if lm and tokenizer is not None:
                out.write(text)
                pick = picker(temperature, args.top_k, args.top_p, seeded(args.seed))
                continue_ids(model, tokenizer.encode(text), 200 if args.max_new is None
                             else args.max_new, pick, on_byte=show)
            elif lm:
                out.write(text)
                generate_text(model, text, **sampling, on_byte=show)
            else:
                answer = generate(model, text, **sampling)
                out.write(f"{text}\t")
                printer.write(answer)
                written += len(answer)
                why = cut_short(text, answer, model, args.max_new)
                if why:
                    warn(why)
            end_line()
    except KeyboardInterrupt:
        end_line()
        print(f"minitf: interrupted (Ctrl-C); the {plural(written, 'byte', sep=True)} generated so "
              f"far {'is' if written == 1 else 'are'} printed above", file=sys.stderr)
        return 130
    return 0


def cmd_doctor(args) -> int:
    from .. import doctor
    return doctor.main()


def cmd_info(args) -> int:
    model = load(args.checkpoint)
    meta = dict(model.metadata)
    if args.json:
        print(json.dumps({"config": model.config.to_dict(), "parameters": count_parameters(model),
                          "metadata": meta}, indent=1))
        return 0
    kind = {"text": "a language model", "pairs": "a pairs model (input TAB output)",
            None: "a model whose metadata does not say what it was trained on"}[model_kind(model)]
    rows = [("config", " ".join(f"{k}={v}" for k, v in model.config.to_dict().items()))]
    if "command" in meta:
        rows.append(("command", meta.pop("command")))
    if "text" in meta:
        rows.append(("text", f"{meta.pop('text')}, context {meta.pop('context', '?')}"))
    if isinstance(meta.get("tokenizer"), dict):
        rows.append(("tokenizer", repr(BPE.from_dict(meta.pop("tokenizer")))))
    trained = [steps_reached(meta),
               f"seed {meta.pop('seed')}" if "seed" in meta else None,
               f"{meta.pop('train_seconds')} s" if "train_seconds" in meta else None]
    if any(trained):
        rows.append(("training", ", ".join(t for t in trained if t)))
    if isinstance(meta.get("val"), dict):
        val = meta.pop("val")
        rows.append(("validation", ", ".join(f"{k} {format_number(v)}" for k, v in val.items())))
    curve = meta.pop("val_curve", None)
    if isinstance(curve, list) and curve:
        steps = ", ".join(str(v.get("step")) for v in curve[:8]) + (" …" if len(curve) > 8 else "")
        rows.append(("val curve", f"{plural(len(curve), 'validation')}, at "
                     f"{'step' if len(curve) == 1 else 'steps'} {steps}"))
    losses, every = meta.pop("loss_curve", None), meta.pop("loss_curve_every", None)
    if isinstance(losses, list) and losses:
        rows.append(("loss curve", f"{plural(len(losses), 'mean')} of "
                     f"{plural(every, 'step') if every else '? steps'}: "
                     f"{format_number(losses[0])} first, {format_number(losses[-1])} last"))
    rows += [(key, json.dumps(value) if isinstance(value, (dict, list)) else str(value))
             for key, value in meta.items()]
    print(f"{args.checkpoint}: {kind}, {count_parameters(model):,} parameters")
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(textwrap.fill(value, 100, initial_indent=f"  {key:<{width}}  ",
                            subsequent_indent=" " * (width + 4), break_on_hyphens=False,
                            break_long_words=False))
    return 0


def steps_reached(meta: dict) -> str | None:
    """The steps a checkpoint's run trained, in words (popped from meta): the planned --steps, or
    the step reached and the plan when the run stopped early (--target-exact, Ctrl-C, a save
    part-way)."""
    planned, trained, step = (meta.pop(k, None) for k in ("steps", "steps_trained", "step"))
    reached = trained if trained is not None else step
    if planned is None or reached is None or reached >= planned:
        known = planned if planned is not None else reached
        return None if known is None else plural(known, "step")
    why = ("interrupted" if meta.get("interrupted") else
           f"reached --target-exact {meta['target_exact']}" if "target_exact" in meta else
           "saved part-way" if "saved_every" in meta else "stopped early")
    return f"{reached} of {plural(planned, 'planned step')} ({why})"


def format_number(v) -> str:
    return f"{v:.4f}" if isinstance(v, float) else str(v)
