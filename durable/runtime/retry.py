"""Retry policy of a step: how many attempts and how long to back off between them."""

from dataclasses import dataclass, field
from datetime import timedelta

from durable.durations import as_timedelta


@dataclass(frozen=True)
class Retry:
    max_attempts: int = 3
    initial_interval: timedelta = timedelta(seconds=1)
    backoff: float = 2.0
    max_interval: timedelta = timedelta(minutes=5)
    non_retryable: tuple[type[BaseException], ...] = field(default_factory=tuple)

    def __post_init__(self):
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        object.__setattr__(self, "initial_interval", as_timedelta(self.initial_interval))
        object.__setattr__(self, "max_interval", as_timedelta(self.max_interval))
        object.__setattr__(self, "non_retryable", tuple(self.non_retryable))

    def should_retry(self, error: BaseException, attempt: int) -> bool:
        return attempt < self.max_attempts and not isinstance(error, self.non_retryable)

    def delay_after(self, attempt: int) -> timedelta:
        """Back-off before attempt ``attempt + 1``."""
        delay = self.initial_interval * (self.backoff ** (attempt - 1))
        return min(delay, self.max_interval)


DEFAULT_RETRY = Retry()
