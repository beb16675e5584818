"""A DAG that counts its validations: proof that a runner plans a job from one validated DAG."""

from __future__ import annotations

from jetspark.core.dag import DAG


class CountingDAG(DAG):
    """A DAG that counts how often it is validated."""

    def __init__(self) -> None:
        super().__init__()
        self.validations = 0

    def validate(self) -> None:
        self.validations += 1
        super().validate()
