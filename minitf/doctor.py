"""`python -m minitf doctor`: why your numbers may differ from the book's.

The book is the course's stored outputs (the notebooks, the stored results), made on one machine
with the versions pinned in pyproject.toml. A learner's numbers can differ from it for these
reasons, and the doctor looks at each:

1. other package versions, torch above all: compared with the pins;
2. other CPU kernels: torch picks vector instructions when it starts (on x86: default, AVX2 or
   AVX-512; the environment variable ATEN_CPU_CAPABILITY chooses), and they add the same numbers
   in other orders. float32 keeps 24 bits (about 7 decimal digits), so its last digits move;
   float64 keeps 53 bits (about 16), so its results still agree to 1e-12;
3. another number of threads: a sum split between threads is added in another order (the same
   effect);
4. a GPU or Apple's MPS: other kernels again, a somewhat larger effect.

It computes one forward pass and one training step of the tiny model, in float64 and in float32,
from weights given by a formula (no random draws: the same weights everywhere), and the forward
pass of the seeded tiny model (`torch.manual_seed(0); Transformer(Config())`, whose random draws
may differ in their last digits), and compares them with the values that `record()` stored in
doctor_reference.json on the book's machine. float64 must agree to 1e-12 of the values' scale and
float32 to FLOAT32_ROUNDING of it; anything beyond is not rounding and is reported with its likely
cause. On a GPU or MPS it reports how far that device's float32 (and float64) results are from
this CPU's, and why.

`python -m minitf doctor` prints the report and exits with 0 when every verdict is ok, 1 when one
differs. In a notebook, `print(minitf.doctor.check().verdict())` prints the verdicts alone.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import json
import math
import os
import platform
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import torch

from .core.config import Config
from .core.data import Pair, make_batch
from .core.devices import mps_available
from .core.evaluate import masked_loss
from .core.model import Transformer
from .core.train import make_optimizer, train_step

REFERENCE = Path(__file__).with_name("doctor_reference.json")
PROMPT = b"hello\tifmmp"  # the sequence notebook 00 feeds the tiny model
PAIRS = (Pair(b"hello", b"ifmmp"), Pair(b"abc", b"bcd"), Pair(b"xyz}~", b"yz{~ "))  # shift pairs
LR = 3e-3  # train's default learning rate
FLOAT64_AGREEMENT = 1e-12
# float32 against the book's float32, as a fraction of the values' largest magnitude. Measured here
# under the default, AVX2 and AVX-512 kernels with 1 and 2 threads, the largest gap was 2.4e-7 of
# it (the seeded model under the default kernels): 2**-16 (1.5e-5) leaves a margin of 60, and a
# real change (another LayerNorm epsilon, a wrong weight) misses by far more.
FLOAT32_ROUNDING = 2.0 ** -16
WIDTH = 100  # the report's lines


# -- the computations ----------------------------------------------------------------------------

def formula_weights(model: Transformer) -> Transformer:
    """Give every parameter a value from a formula (sines of its running index) instead of a random
    draw, computed in float64 by Python and rounded to the model's dtype: the same numbers on every
    machine. Matrices get amplitude 1/sqrt(fan_in), norm gains 1 ± 0.1, biases ± 0.1."""
    index = 0
    with torch.no_grad():
        for name, p in model.named_parameters():
            wave = torch.tensor([math.sin(1.0 + 0.7 * (index + k)) for k in range(p.numel())],
                                dtype=torch.float64).reshape(p.shape)
            index += p.numel()
            if p.dim() >= 2:
                p.copy_(wave / math.sqrt(p.shape[-1]))
            elif "norm" in name and name.endswith("weight"):
                p.copy_(1 + 0.1 * wave)
            else:
                p.copy_(0.1 * wave)
    return model


def tiny_model(dtype: torch.dtype) -> Transformer:
    """The tiny model without dropout (a training step then draws nothing), with formula weights."""
    with torch.random.fork_rng(devices=[]):  # building it draws weights (replaced below): the
        model = Transformer(Config(dropout=0.0))  # caller's random state is left as it was
    return formula_weights(model.to(dtype))


def forward(dtype: torch.dtype, device: str = "cpu") -> torch.Tensor:
    """The scores (256,) for the byte after PROMPT: the last row, which every earlier one feeds."""
    model = tiny_model(dtype).to(device).eval()
    with torch.no_grad():
        logits = model(torch.tensor([list(PROMPT)], device=device))  # (1, T, 256)
    return logits[0, -1].cpu()


def training_step(dtype: torch.dtype) -> torch.Tensor:
    """One train_step (AdamW, clipping) on PAIRS: the loss before it and after it."""
    model = tiny_model(dtype).train()
    ids, targets = make_batch(list(PAIRS))
    before = train_step(model, make_optimizer(model, LR), ids, targets, clip=1.0)
    with torch.no_grad():
        after = masked_loss(model(ids), targets)
    return torch.stack([before.detach(), after])


def seeded_model() -> Transformer:
    """`torch.manual_seed(0); Transformer(Config())`, leaving the caller's random state alone."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return Transformer(Config()).eval()


def seeded_forward() -> torch.Tensor:
    """The seeded tiny model's last row of scores (float32)."""
    with torch.no_grad():
        return seeded_model()(torch.tensor([list(PROMPT)]))[0, -1]


def seeded_weights_hash() -> str:
    """A fingerprint of the seeded model's weights: equal only if every bit of every draw is."""
    digest = hashlib.sha256()
    for tensor in seeded_model().state_dict().values():
        digest.update(tensor.numpy().tobytes())
    return digest.hexdigest()


CHECKS = {  # name: (what is compared, how it is computed, float64 or float32)
    "forward pass, float64": ("logits", lambda: forward(torch.float64), torch.float64),
    "forward pass, float32": ("logits", lambda: forward(torch.float32), torch.float32),
    "training step, float64": ("losses", lambda: training_step(torch.float64), torch.float64),
    "training step, float32": ("losses", lambda: training_step(torch.float32), torch.float32),
    "seeded tiny model, float32": ("logits", seeded_forward, torch.float32),
}


def conditions() -> dict:
    """What decides the last digits here: torch's version, its CPU kernels, its threads."""
    return {"torch": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "threads": torch.get_num_threads()}


def record(path=REFERENCE) -> Path:
    """Compute every check on this machine, with one thread (as the notebooks run), and store the
    values as the book's: `python -c "import minitf.doctor as d; d.record()"` on the book's machine.
    float32 values are stored exactly (every float32 is a float64)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        values = {name: [float(x) for x in compute()] for name, (_, compute, _) in CHECKS.items()}
        made = {**conditions(), "seeded_weights_sha256": seeded_weights_hash()}
    finally:
        torch.set_num_threads(threads)
    rows = ",\n".join(f"  {json.dumps(name)}: {json.dumps(v)}" for name, v in values.items())
    path = Path(path)
    path.write_text(f'{{\n "made_with": {json.dumps(made)},\n "values": {{\n{rows}\n }}\n}}\n')
    return path


def reference(path=REFERENCE) -> dict:
    return json.loads(Path(path).read_text())


# -- the report ----------------------------------------------------------------------------------

@dataclass
class Finding:
    """One verdict. summary is what a notebook shows (the same on every machine where it is ok);
    detail holds this machine's numbers and the explanation."""
    topic: str
    ok: bool
    summary: str
    detail: str = ""

    def line(self) -> str:
        return f"{'ok' if self.ok else 'DIFFERS'}  {self.topic}: {self.summary}"


def wrapped(text: str, indent: str = "") -> str:
    return textwrap.fill(text, WIDTH, initial_indent=indent, subsequent_indent=indent + "  ")


@dataclass
class Report:
    facts: list[str]
    findings: list[Finding]
    notes: list[str] = field(default_factory=list)    # explanations the findings call for
    devices: list[str] = field(default_factory=list)  # a GPU's or MPS's results against the CPU's

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.findings)

    def conclusion(self) -> str:
        if self.ok:
            return "All well: this set-up computes the book's numbers."
        bad = sum(not f.ok for f in self.findings)
        return f"{bad} of {len(self.findings)} checks differ from the book: the reasons are above."

    def verdict(self) -> str:
        """The verdicts, without this machine's numbers where all is well (then every machine
        prints the same lines); what differs comes with its explanation."""
        lines = []
        for f in self.findings:
            lines.append(f.line())
            if not f.ok:
                lines.append(wrapped(f.detail, "    "))
        return "\n".join([*lines, self.conclusion()])

    def __str__(self) -> str:
        lines = ["minitf doctor: why your numbers may differ from the book's", "",
                 *map(wrapped, self.facts), ""]
        for f in self.findings:
            lines += [f.line(), wrapped(f.detail, "    ")] if f.detail else [f.line()]
        for paragraph in [*self.notes, *self.devices]:
            lines += ["", wrapped(paragraph)]
        lines += ["", self.conclusion()]
        return "\n".join(lines)


def pins() -> list[tuple[str, str, str | None]]:
    """(package, pinned version, extra or None) from minitf's installed metadata (pyproject.toml)."""
    found = []
    for requirement in importlib.metadata.requires("minitf") or []:
        match = re.match(r'\s*([A-Za-z0-9_.-]+)\s*==\s*([^;\s]+)\s*(?:;\s*extra\s*==\s*"([^"]+)")?',
                         requirement)
        if match:
            found.append(match.groups())
    return found


def installed(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def check_versions() -> Finding:
    topic = "versions"
    try:
        pinned = pins()
    except importlib.metadata.PackageNotFoundError:
        return Finding(topic, False, "minitf is not installed, so its pins are unknown",
                       "Run `make lab` in the repository (it creates .venv with the pinned "
                       "versions), or `pip install -e .` in the environment you use.")
    seen, wrong = [], []
    for package, version, extra in pinned:
        have = installed(package)
        if have is None:
            if extra:
                seen.append(f"{package} not installed (optional: the {extra} extra)")
            else:
                wrong.append(f"{package} not installed (pinned {version})")
            continue
        seen.append(f"{package} {have}")
        if have.partition("+")[0] != version:  # torch 2.13.0+cpu is 2.13.0, built for the CPU
            wrong.append(f"{package} {have} (pinned {version})")
    if not wrong:
        return Finding(topic, True, "every package as pinned in pyproject.toml", ", ".join(seen))
    fix = " ".join(f"{p}=={v}" for p, v, _ in pinned if any(w.startswith(f"{p} ") for w in wrong))
    return Finding(topic, False, "; ".join(wrong),
                   "The book was made with the pinned versions. With others the course most "
                   "likely runs, but printed numbers may differ in their last digits (torch above "
                   "all: its kernels change between releases). Install the pins: `make lab` in the "
                   f"repository (a fresh .venv), or `pip install {fix}` in this environment.")


def compare(got: torch.Tensor, stored: list[float], dtype: torch.dtype):
    """(largest difference, the values' scale, bit for bit?) of a result against stored values."""
    expected = torch.tensor(stored, dtype=torch.float64).to(dtype)
    identical = torch.equal(got.to(dtype), expected)
    diff = float((got.double() - expected.double()).abs().max())
    scale = max(float(expected.double().abs().max()), 1e-30)
    return diff, scale, identical


def float32_causes(made: dict, here: dict) -> list[str]:
    """What differs here from the book's machine that moves float32's last digits."""
    causes = []
    if here["cpu_capability"] != made["cpu_capability"]:
        causes.append(f"this CPU's kernels ({here['cpu_capability']}; the book's: "
                      f"{made['cpu_capability']}) add the same products in another order")
    if here["threads"] != made["threads"]:
        causes.append(f"{here['threads']} threads (the book's: {made['threads']}) split some sums "
                      "differently")
    if here["torch"].partition("+")[0] != made["torch"].partition("+")[0]:
        causes.append(f"torch {here['torch']} (the book's: {made['torch']}) has other kernels")
    return causes or ["this processor's math libraries pick other code paths than the book's "
                      "(same torch, kernels and threads)"]


def check_numbers(ref: dict) -> tuple[list[Finding], list[str]]:
    """The verdicts on the computations, and the explanations they call for."""
    made, here = ref["made_with"], conditions()
    measured = {name: (*compare(compute(), ref["values"][name], dtype), what, dtype)
                for name, (what, compute, dtype) in CHECKS.items()}
    same_torch = here["torch"].partition("+")[0] == made["torch"].partition("+")[0]
    findings = []
    for name, (diff, scale, identical, what, dtype) in measured.items():
        double = dtype == torch.float64
        size = f"largest difference {diff:.1e}, {diff / scale:.1e} of the {what}' scale {scale:.3g}"
        if diff <= (FLOAT64_AGREEMENT if double else FLOAT32_ROUNDING) * scale:
            summary = (f"the book's {what} to 1e-12" if double
                       else f"the book's {what} within float32 rounding")
            findings.append(Finding(name, True, summary, "bit for bit" if identical else f"{size}: rounding"))
        elif double:
            cause = (f"torch is the book's ({made['torch']}), so minitf's code differs from the "
                     "book's: look for local changes (`git status`, `git diff`)" if same_torch else
                     f"this torch ({here['torch']}) is not the book's ({made['torch']}) and "
                     "computes something else: install the pinned versions (`make lab`)")
            findings.append(Finding(name, False, f"{size}: more than rounding", (
                "float64 keeps about 16 digits, and kernels or threads move the last one or two at "
                f"most: this is not rounding. {cause}.")))
        else:
            float64_ok = all(d <= FLOAT64_AGREEMENT * sc for d, sc, _, _, t in measured.values()
                             if t == torch.float64)
            cause = ("The float64 checks agree, so the computation is the book's and only its "
                     "float32 arithmetic is coarser here: torch.get_float32_matmul_precision() is "
                     f"'{torch.get_float32_matmul_precision()}' (the book's: 'highest'; 'high' and "
                     "'medium' let matrix products round to fewer bits)." if float64_ok else
                     "The float64 checks differ too: their explanation holds for this one.")
            findings.append(Finding(name, False, f"{size}: more than float32 rounding", cause))
    notes = []
    rounded = [name for name, f in zip(measured, findings)
               if f.ok and measured[name][4] == torch.float32 and not measured[name][2]]
    if rounded:
        notes.append("Why float32 differs in its last digits: float32 keeps about 7 significant "
                     "digits, and " + "; ".join(float32_causes(made, here)) + ". That is "
                     "rounding: the notebooks print 3-4 decimals and check longer results with "
                     "tolerances, so nothing needs fixing.")
    if seeded_weights_hash() != made["seeded_weights_sha256"]:
        notes.append("torch.manual_seed(0) gave the seeded model other weights here than the "
                     "book's, in their last digits: torch.randn draws normal numbers with this "
                     "CPU's vector instructions (ATEN_CPU_CAPABILITY), and those agree with the "
                     "book's draws to about 7 digits, not bit for bit. A model trained from them "
                     "drifts away from the book's slowly, step by step, instead of repeating it "
                     "bit for bit.")
    return findings, notes


def accelerators() -> list[tuple[str, str, tuple]]:
    """(device, its name, the dtypes it computes) for each kind of GPU torch sees here."""
    found = []
    if torch.cuda.is_available():
        found.append(("cuda", torch.cuda.get_device_name(0), (torch.float64, torch.float32)))
    if mps_available():
        found.append(("mps", "Apple MPS", (torch.float32,)))  # MPS computes no float64
    return found


WHY_ON_A_GPU = (
    "Why: a GPU's kernels split, order and fuse sums their own way, so float32 agrees with the "
    "CPU's to about 6-7 digits (a difference near 1e-7 of the scale) and float64 to many more, but "
    "not bit for bit. Training then drifts apart slowly, step after step: a run on the GPU matches "
    "the book's losses to a few decimals, not to the last digit. Differences above 1e-4 of the "
    "scale usually mean matrix products in reduced precision (TF32, bfloat16).")


def device_report(found=None) -> list[str]:
    """How far each GPU's (or MPS's) forward pass is from this CPU's, and why: information, not a
    verdict (the book was made on a CPU, and no GPU repeats a CPU bit for bit)."""
    found = accelerators() if found is None else found
    if not found:
        return ["GPU: none here (torch sees no CUDA device and no Apple MPS); the course runs on "
                "the CPU."]
    paragraphs = []
    for device, name, dtypes in found:
        sizes = []
        for dtype in dtypes:
            bits = str(dtype).removeprefix("torch.")
            try:
                diff, scale, identical = compare(forward(dtype, device), forward(dtype).tolist(), dtype)
            except Exception as e:  # a broken driver is worth a line, not a crash
                sizes.append(f"{bits} could not be computed ({type(e).__name__}: {e})")
                continue
            sizes.append(f"{bits} {'bit for bit' if identical else f'{diff / scale:.1e} of the scale'}")
        tf32 = (f" TF32 matrix products are {'on' if torch.backends.cuda.matmul.allow_tf32 else 'off'}"
                " here (torch.backends.cuda.matmul.allow_tf32)." if device == "cuda" else "")
        paragraphs.append(f"{device} ({name}), the forward pass against this CPU's: "
                          f"{', '.join(sizes)}. {WHY_ON_A_GPU}{tf32}")
    return paragraphs


def facts(ref: dict) -> list[str]:
    here, made = conditions(), ref["made_with"]
    forced = os.environ.get("ATEN_CPU_CAPABILITY")
    chosen = f"ATEN_CPU_CAPABILITY={forced}" if forced else "ATEN_CPU_CAPABILITY not set: the best this CPU has"
    return [f"this machine: Python {platform.python_version()}, torch {here['torch']}, CPU kernels "
            f"{here['cpu_capability']} ({chosen}), {here['threads']} threads",
            f"the book's:   torch {made['torch']}, CPU kernels {made['cpu_capability']}, "
            f"{made['threads']} thread{'s' if made['threads'] != 1 else ''} "
            "(notebooks set 1: minitf.notebook.setup)"]


def check(path=REFERENCE) -> Report:
    """Every check against the values stored at path; a difference is reported, never raised."""
    ref = reference(path)
    findings, notes = check_numbers(ref)
    return Report(facts(ref), [check_versions(), *findings], notes, device_report())


# where a learner reads on: the page that explains the usual surprises (printed by `main`)
TROUBLESHOOTING = ("More help: docs/troubleshooting.md in the repository's folder (CPU-only torch, widgets "
                   "shown as pictures, numbers on a GPU or MPS, JupyterLab's scrolling, running as root).")


def main() -> int:
    """`python -m minitf doctor`: print the report; 0 when every verdict is ok, 1 otherwise."""
    report = check()
    print(report)
    print(TROUBLESHOOTING)
    return 0 if report.ok else 1
