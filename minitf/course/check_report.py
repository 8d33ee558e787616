"""What the checks of a learner's assembled pieces give back (`parts.check`, `training_parts.check`,
`speaking.check_speaking`): the pieces that broke, and a report a notebook shows as its sentences.
"""
from __future__ import annotations


class CheckReport:
    """A check's outcome: `broken` (piece → why) is empty when every piece holds. A subclass is a
    @dataclass(repr=False) with its own __str__, the report; a notebook cell that ends in the check
    shows that report, not the fields."""
    broken: dict

    @property
    def ok(self) -> bool:
        return not self.broken

    def __repr__(self):
        return str(self)
