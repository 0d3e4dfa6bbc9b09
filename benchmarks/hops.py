"""Loaded into a bench worker (``-I benchmarks.hops``) by benchmarks/resume_hops.py: the time of
each hop of an advance, and of each sweep tick, one line each in var/hops/<pid>.txt. Never
loaded otherwise."""

import os
import time
from pathlib import Path

from celery.signals import task_prerun, task_received, worker_process_init

OUT = Path(__file__).resolve().parent.parent / "var" / "hops"
_files = {}


def stamp(run_id: str, hop: str) -> None:
    out = _files.get(os.getpid())
    if out is None:
        OUT.mkdir(parents=True, exist_ok=True)
        out = _files[os.getpid()] = open(OUT / f"{os.getpid()}.txt", "a", buffering=1)
    out.write(f"{run_id} {hop} {time.time():.6f}\n")


@task_received.connect
def _received(request=None, **kwargs):
    """In the worker's main process: the message is off the broker."""
    if request.name == "durable.advance" and request.args:
        stamp(request.args[0], "received")


@task_prerun.connect
def _prerun(task=None, args=None, **kwargs):
    """In the pool process: the task starts (a sweep tick, too)."""
    if task.name == "durable.advance" and args:
        stamp(args[0], "prerun")
    elif task.name == "durable.sweep":
        stamp("-", "sweep")


@worker_process_init.connect
def _wrap_the_store(**kwargs):
    """The claim and the two reads of a resume, each stamped when it returns."""
    from durable.runtime.store import live

    claim, load, pending = live.claim, live.LiveStore.load, live.LiveStore.pending_signals

    def claimed(run_id, **options):
        result = claim(run_id, **options)
        stamp(run_id, "claimed")
        return result

    def loaded(lease):
        result = load(lease)
        stamp(lease.run_id, "loaded")
        return result

    def signals(lease):
        result = pending(lease)
        stamp(lease.run_id, "signals")
        return result

    live.claim, live.LiveStore.load, live.LiveStore.pending_signals = claimed, loaded, signals
