"""kombu transports with the fixes our workers need: filesystem (the embedded default) and Redis.

Filesystem: kombu's own writes a message file in place, so a worker polling the folder can read it
half-written and crash on the JSON. Here a message is written under a name the reader
ignores and renamed into the queue when complete; a reader claims a file by renaming it
into its own folder on the same filesystem, so exactly one worker gets each message.
"""

import os
import uuid

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.transport import redis as redis_transport
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        name = f"{filesystem.monotonic() * 1000:015.0f}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = final + ".partial"
        try:
            with open(partial, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to the queue folder") from exc

    def _get(self, queue):
        wanted = f"{queue}.msg"
        claimed_dir = self.processed_folder
        for name in sorted(os.listdir(self.data_folder_in)):
            if name.partition(".")[2] != wanted:
                continue
            claimed = os.path.join(claimed_dir, f"{os.getpid()}-{name}")
            try:
                os.rename(os.path.join(self.data_folder_in, name), claimed)
            except OSError:
                continue  # another worker took it first
            try:
                with open(claimed, "rb") as f:
                    payload = f.read()
            finally:
                os.remove(claimed)
            return loads(bytes_to_str(payload))
        raise filesystem.Empty()


class Transport(filesystem.Transport):
    Channel = Channel


class RedisChannel(redis_transport.Channel):
    """Celery 5.7's consumer collects a broken connection, then closes it again; the second
    close asks this channel for a client of a transport that no longer has one and died with
    ``AttributeError: 'NoneType' object has no attribute 'hostname'``, an error Celery does
    not treat as a connection error, so the worker exited when Redis restarted. Here it is a
    connection error, which Celery ignores on close and answers by reconnecting.
    """

    def _connparams(self, asynchronous=False):
        if self.connection.client is None:
            raise redis_transport.redis.exceptions.ConnectionError(
                "the broker connection was already closed"
            )
        return super()._connparams(asynchronous=asynchronous)


class RedisTransport(redis_transport.Transport):
    Channel = RedisChannel
