"""What the growth studies share: where a run grew, the mean of several seeds' curves, a curve's
value at a point, and the ring that marks a growth on a figure."""
from __future__ import annotations


def growth_points(stages: list[dict]) -> list[float]:
    """The compute at the end of every stage but the last: where the model was grown."""
    done, points = 0.0, []
    for stage in [s for s in stages if "d_model" in s][:-1]:
        done += 6 * stage["parameters"] * stage["tokens"]
        points.append(done)
    return points


def mean_curve(curves: list) -> tuple[list[float], list[float]]:
    """Mean over seeds of curves evaluated at the same points: (compute, value). Every seed of an
    arm is evaluated at the same steps; its compute differs in the last digits (parameters × tokens
    of slightly different batches), so x is averaged too."""
    n = len(curves)
    xs = [sum(c[0][i] for c in curves) / n for i in range(len(curves[0][0]))]
    ys = [sum(c[1][i] for c in curves) / n for i in range(len(curves[0][1]))]
    return xs, ys


def value_at(xs: list[float], ys: list[float], x: float) -> float:
    """y at x on the polyline (xs, ys), x inside its range."""
    for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
        if x0 <= x <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return ys[-1]


GROWTH_MARK = {"marker": "o", "ms": 8, "mfc": "none", "mew": 1.8, "ls": ""}  # a ring: where an arm grew


def ring(k: int) -> dict:
    """The growth ring of the k-th arm in a panel: arms that grow at the same point (the same small
    run) get rings of different sizes, one inside the other, so that each shows."""
    return {**GROWTH_MARK, "ms": 13 - 3 * k}
