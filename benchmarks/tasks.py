"""The floor: a plain Celery chain of K tasks, no durability; the last one counts in Redis."""

import os

import redis
from celery import shared_task

_redis = None


@shared_task(name="bench.chain_step", ignore_result=True)
def chain_step(x: int) -> int:
    return x + 1


@shared_task(name="bench.chain_last", ignore_result=True)
def chain_last(x: int) -> int:
    global _redis
    if _redis is None:
        _redis = redis.Redis.from_url(os.environ["BENCH_COUNTER_URL"])
    _redis.incr("bench:chains_done")
    return x + 1
