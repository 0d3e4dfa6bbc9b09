"""The embedded broker: messages written by many processes are read whole, and once."""

import multiprocessing

from kombu import Connection

from config.broker import Transport


def produce(folder: str, producer: int, count: int) -> None:
    with Connection(transport=Transport, transport_options=options(folder)) as conn:
        queue = conn.SimpleQueue("advance")
        for n in range(count):
            queue.put({"producer": producer, "n": n, "padding": "x" * 20_000})
        queue.close()


def options(folder: str) -> dict:
    return {
        "data_folder_in": f"{folder}/queue",
        "data_folder_out": f"{folder}/queue",
        "processed_folder": f"{folder}/processed",
        "control_folder": f"{folder}/control",
        "polling_interval": 0.01,
    }


def test_messages_from_concurrent_producers_arrive_whole_and_once(tmp_path):
    for name in ("queue", "processed", "control"):
        (tmp_path / name).mkdir()
    producers = [
        multiprocessing.Process(target=produce, args=(str(tmp_path), p, 100)) for p in range(3)
    ]
    received = []

    with Connection(transport=Transport, transport_options=options(str(tmp_path))) as conn:
        queue = conn.SimpleQueue("advance")
        for producer in producers:
            producer.start()
        while len(received) < 300:
            message = queue.get(timeout=30)  # a half-written file would fail to decode here
            received.append((message.payload["producer"], message.payload["n"]))
            message.ack()
        queue.close()
    for producer in producers:
        producer.join()

    assert sorted(received) == [(p, n) for p in range(3) for n in range(100)]
