"""What publisher confirms cost a sender: ``send_task`` timed with and without
``broker_transport_options={"confirm_publish": True}`` on one RabbitMQ node.

    .venv/bin/python benchmarks/publish_confirms.py [--url amqp://...] [--messages 2000]

Every advance is a publish, so this is the price of each. The messages go to a classic
queue of this script's own (a quorum queue when ``--quorum``), deleted at the end; no
worker runs. Prints the total and the p50/p99 of one call, in milliseconds.
"""

import argparse
import os
import statistics
import time

from celery import Celery
from kombu import Connection, Exchange, Queue

DEFAULT_URL = "amqp://guest:guest@127.0.0.1:5672//"


def timed_sends(url: str, queue: Queue, messages: int, confirm: bool) -> list[float]:
    app = Celery("publish-confirms", broker=url, set_as_current=False)
    app.conf.update(
        broker_transport_options={"confirm_publish": True} if confirm else {},
        task_queues=[queue],
        task_default_queue=queue.name,
        task_serializer="json",
    )
    try:
        with app.producer_or_acquire() as producer:
            for _ in range(50):  # connection, channel, confirm.select: not timed
                app.send_task("bench.noop", (0,), producer=producer)
            times = []
            for i in range(messages):
                started = time.perf_counter()
                app.send_task("bench.noop", (i,), producer=producer)
                times.append((time.perf_counter() - started) * 1000)
        return times
    finally:
        app.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", default=os.environ.get("BENCH_AMQP_URL", DEFAULT_URL))
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3, help="alternating, to even out load")
    parser.add_argument("--quorum", action="store_true", help="a quorum queue (a cluster's URL)")
    options = parser.parse_args()
    name = f"bench-confirms-{os.getpid()}"
    arguments = {"x-queue-type": "quorum"} if options.quorum else None
    queue = Queue(name, Exchange(name), routing_key=name, queue_arguments=arguments)
    results: dict[bool, list[float]] = {False: [], True: []}
    try:
        for _ in range(options.rounds):
            for confirm in (False, True):
                results[confirm] += timed_sends(options.url, queue, options.messages, confirm)
    finally:
        with Connection(options.url) as broker:
            bound = queue(broker.default_channel)
            bound.delete()
            queue.exchange(broker.default_channel).delete()
    for confirm, times in results.items():
        times.sort()
        print(
            f"confirm_publish={confirm!s:5}: {len(times)} sends, "
            f"{sum(times) / options.rounds:7.0f} ms per {options.messages}, "
            f"p50 {statistics.median(times):.3f} ms, p99 {times[int(len(times) * 0.99)]:.3f} ms"
        )


if __name__ == "__main__":
    main()
