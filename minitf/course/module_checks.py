"""Checking a learner's nn.Module class: built from a Config, given minitf's weights by name, run.

A class exercise (notebook 08's MyAttention, MyBlock, MyTransformer) is judged the way a function is
(`minitf.course.feedback.check_function`, in float64 and again in float32), through a driver: the
learner's class is built with the reference module's config, moved to its dtype, and loaded with its
state dict, so that the two compute with the same weights. What can go wrong before any number is
compared is said here, in words: not a class, not an nn.Module, a plain tensor attribute that
`.to()` does not move, a parameter made in `forward`, a name or a shape the state dict does not
expect (the names are minitf's, minitf/core/minimal.py's), a head tied against the config.
"""
from __future__ import annotations

import copy
from typing import Callable

import torch
from torch import nn

from .feedback import ExerciseError


def minitf_module(*case):
    """The reference "class" of a class exercise: the case's own minitf module, as it is."""
    raise AssertionError("a marker, never called: drive_module runs the case's module itself")


def drive_module(call: Callable) -> Callable:
    """A driver (Exercise.drive) for a class exercise: drive(cls, reference, *inputs) builds the
    learner's `cls` like `reference` (`build`) and returns call(module, *inputs), without gradients."""
    def drive(cls, reference, *inputs):
        module = reference if cls is minitf_module else build(cls, reference, inputs, call)
        with torch.no_grad():
            return call(module.eval(), *inputs)
    return drive


def _dtype(module: nn.Module) -> torch.dtype:
    return next(p.dtype for p in module.parameters() if p.is_floating_point())


def _shape(t) -> str:
    return str(tuple(t.shape))


def build(cls, reference: nn.Module, inputs: tuple = (), call: Callable | None = None) -> nn.Module:
    """cls(reference.config) in the reference's dtype with the reference's weights; ExerciseError
    naming what stops it (the class's own exceptions propagate, for the check to show the line)."""
    shown = getattr(cls, "__name__", type(cls).__name__)
    if not isinstance(cls, type):
        cls(reference.config)  # a stub raising NotImplementedError is "not written yet", not this
        raise ExerciseError(f"{shown} is a {type(cls).__name__}, not a class: write `class {shown}"
                            f"(nn.Module):` with __init__(self, config) and forward", ("_not_a_class",))
    if not issubclass(cls, nn.Module):
        raise ExerciseError(f"{shown} is a class but not an nn.Module: `class {shown}(nn.Module):`, and "
                            "super().__init__() first in __init__, so that its layers are registered",
                            ("_not_a_module",))
    config = reference.config
    module = cls(config)
    dtype = _dtype(reference)
    module.to(dtype)
    _plain_tensors(module, dtype)
    _state_dict_names(module, reference, inputs, call)
    _tied_as_configured(module, config)
    module.load_state_dict(reference.state_dict())
    return module


def _plain_tensors(module: nn.Module, dtype: torch.dtype) -> None:
    """A tensor kept as a plain attribute is not moved by .to() nor saved in the state dict."""
    for prefix, sub in module.named_modules():
        for name, value in vars(sub).items():
            if isinstance(value, torch.Tensor) and value.is_floating_point() and value.dtype != dtype:
                where = f" (in {prefix})" if prefix else ""
                raise ExerciseError(
                    f"self.{name}{where} is a plain tensor attribute: .to({str(dtype).removeprefix('torch.')}) "
                    f"left it {str(value.dtype).removeprefix('torch.')}, and the state dict does not "
                    f"hold it. self.register_buffer(\"{name}\", …) makes it move with the module and "
                    "load with its weights", ("_plain_tensor",))


def _made_in_forward(module: nn.Module, inputs: tuple, call: Callable | None) -> set[str]:
    """The state-dict names a forward call adds to a copy of the module (a layer made in forward)."""
    if call is None:
        return set()
    probe, before = copy.deepcopy(module), set(module.state_dict())
    try:  # a layer made in forward is float32 in a float64 module: the call may well raise after it
        with torch.no_grad():
            call(probe.eval(), *copy.deepcopy(inputs))
    except Exception:
        pass
    return set(probe.state_dict()) - before


def _state_dict_names(module: nn.Module, reference: nn.Module, inputs: tuple, call) -> None:
    expected = {k: tuple(v.shape) for k, v in reference.state_dict().items()}
    got = {k: tuple(v.shape) for k, v in module.state_dict().items()}
    missing = [k for k in expected if k not in got]
    made = _made_in_forward(module, inputs, call)
    if made:
        raise ExerciseError(
            f"yours creates {', '.join(sorted(made))} in forward: a layer made there is new and random "
            "at every call, and not among the parameters the optimizer trains or the state dict "
            "loads. Create every layer in __init__; forward only uses them", ("_made_in_forward",))
    if missing:
        k = missing[0]
        near = [g for g in got if g not in expected and g.rsplit(".", 1)[-1] == k.rsplit(".", 1)[-1]
                and got[g] == expected[k]]
        also = f" (yours has {near[0]} of that shape: name the layer as minitf does)" if near else ""
        more = f", and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise ExerciseError(
            f"minitf's state dict has {k} {_shape_of(expected[k])}{more}; yours has no such name{also}. "
            "The names are minitf's (minitf/core/minimal.py), so that weights move between the two: "
            + _expected_names(expected), ("_state_dict_names",))
    extra = [k for k in got if k not in expected]
    if extra:
        raise ExerciseError(
            f"yours has {extra[0]} {_shape_of(got[extra[0]])}, which minitf's state dict does not: "
            + _expected_names(expected), ("_state_dict_names",))
    for k, shape in expected.items():
        if got[k] != shape:
            turned = " (nn.Linear(in, out) stores its weight as (out, in))" if got[k] == shape[::-1] else ""
            raise ExerciseError(f"{k} is {_shape_of(got[k])} in yours, {_shape_of(shape)} in minitf's "
                                f"state dict{turned}", ("_state_dict_shapes",))


def _shape_of(shape: tuple) -> str:
    return str(shape) if len(shape) != 1 else f"({shape[0]},)"


def _expected_names(expected: dict) -> str:
    shown = list(expected.items())[:12]
    return "minitf's are " + ", ".join(f"{k} {_shape_of(s)}" for k, s in shown) \
        + (", …" if len(expected) > len(shown) else "")


def _tied_as_configured(module: nn.Module, config) -> None:
    head, embed = getattr(module, "head", None), getattr(module, "embed", None)
    if head is None or embed is None:
        return
    tied = head.weight is embed.weight
    if config.tie_embeddings and not tied:
        raise ExerciseError("yours gives the head a table of its own, but this config ties them "
                            "(tie_embeddings=True): self.head.weight = self.embed.weight, after both "
                            "are made", ("_head_not_tied",))
    if tied and not config.tie_embeddings:
        raise ExerciseError("yours ties the head to the embedding, but this config does not "
                            "(tie_embeddings=False): the head is a table of its own", ("_head_tied",))
