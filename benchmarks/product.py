"""The product under a provider's traffic: WhatsApp deliveries, each a text from a new number.

    ./scripts/bench --product                    # webhook capacity, then a 2 + 5 minute soak
    ./scripts/bench --product --soak             # 20 minutes above capacity, then 20 idle

A production-like stack on PostgreSQL + Redis: gunicorn with 3 sync workers, the default
Celery worker with 4 processes (and the takeover lane), the ``llm`` worker, the sweep's
worker and beat, the Cloud API backend pointed at a fake Graph API that records each send.

1. **Webhook capacity**: closed loop, as many clients as gunicorn has workers, the Celery
   workers running: deliveries per second answered, per gunicorn worker.
2. **Soak**: signed deliveries offered open loop at ``--rate`` (above what the workers can
   greet: the greeting is behind the 20/s ``whatsapp-send`` limit and each conversation is a
   few advances) for the load period, then nothing for the idle period. Every conversation
   must be greeted exactly once; the time from the last delivery to the last greeting is the
   time to drain. Progress is printed every 15 s; the figures at the end, and in
   benchmarks/results/product-<time>.json. Exit status 1 if a greeting is missing.
"""

import argparse
import hashlib
import hmac
import json
import os
import secrets
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/durable_product_bench")
os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/8")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
os.environ["WHATSAPP_APP_SECRET"] = secrets.token_urlsafe(24)
os.environ["WHATSAPP_BACKEND"] = "cloud_api"
os.environ["WHATSAPP_ACCESS_TOKEN"] = "bench-token"
os.environ["WHATSAPP_PHONE_NUMBER_ID"] = "BENCH"
os.environ["WHATSAPP_INTAKE"] = "celery"
os.environ["DURABLE_DISPATCHER"] = "celery"
os.environ.setdefault("LOG_LEVEL", "WARNING")
for name in ("DEBUG", "DURABLE_WORKFLOW_MODULES"):
    os.environ.pop(name, None)

import run_stack  # noqa: E402  (scripts/run_stack.py: the worker commands production uses)

from benchmarks import product_latencies  # noqa: E402
from benchmarks.database import ensure_database  # noqa: E402
from benchmarks.report import pct  # noqa: E402

ensure_database(os.environ["DATABASE_URL"])

import django  # noqa: E402

django.setup()

import redis  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from processes.webhooks.models import WebhookDelivery  # noqa: E402

GUNICORN_WORKERS = 3
WORKER_CONCURRENCY = 4
PROGRESS_SECONDS = 15


class FakeGraphApi:
    """``POST /<phone-number-id>/messages`` answered as Meta does, each send recorded with its
    time; ``GET /<media-id>`` answers the media's URL on a TLS server of its own (the app
    fetches media over https only), which serves a sample PDF, or PNG for a selfie."""

    def __init__(self, tls_dir: Path):
        self.sends: list[tuple[float, str, str]] = []  # (time, recipient, first words)
        self.media_url = ""
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def answer(self, body: bytes, content_type: str = "application/json"):
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                body = json.loads(
                    self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}"
                )
                text = (body.get("text") or {}).get("body", "")
                fake.sends.append((time.time(), str(body.get("to", "")), text[:40]))
                self.answer(
                    json.dumps(
                        {
                            "messaging_product": "whatsapp",
                            "contacts": [{"wa_id": body.get("to")}],
                            "messages": [{"id": f"wamid.BENCH.{secrets.token_hex(8)}"}],
                        }
                    ).encode()
                )

            def do_GET(self):
                media_id = self.path.strip("/").split("/")[-1]
                content, mime_type = media_of(media_id)
                if self.path.startswith("/media/"):
                    self.answer(content, mime_type)
                    return
                meta = {
                    "url": f"{fake.media_url}/media/{media_id}",
                    "mime_type": mime_type,
                    "sha256": hashlib.sha256(content).hexdigest(),
                    "file_size": len(content),
                    "id": media_id,
                }
                self.answer(json.dumps(meta).encode())

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.tls = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.certificate = self_signed(tls_dir)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.certificate, tls_dir / "key.pem")
        self.tls.socket = context.wrap_socket(self.tls.socket, server_side=True)
        self.media_host = f"127.0.0.1:{self.tls.server_port}"
        self.media_url = f"https://{self.media_host}"
        for server in (self.server, self.tls):
            server.daemon_threads = True
            threading.Thread(
                target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
            ).start()

    def greeted(self) -> dict[str, float]:
        """Each recipient's first send (the greeting) and when it arrived."""
        first: dict[str, float] = {}
        for at, to, _ in list(self.sends):
            first.setdefault(to, at)
        return first


def media_of(media_id: str) -> tuple[bytes, str]:
    from processes.whatsapp.samples import sample_pdf, sample_png

    if "selfie" in media_id:
        return sample_png(), "image/png"
    return sample_pdf(media_id), "application/pdf"


def self_signed(directory: Path) -> Path:
    """A certificate for 127.0.0.1 (the workers trust it through SSL_CERT_FILE)."""
    directory.mkdir(parents=True, exist_ok=True)
    certificate = directory / "certificate.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2"]
        + ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
        + ["-keyout", str(directory / "key.pem"), "-out", str(certificate)],
        check=True,
        capture_output=True,
    )
    return certificate


class Stack:
    def __init__(self, web_port: int):
        self.web_port = web_port
        self.procs: dict[str, subprocess.Popen] = {}
        self.log_dir = ROOT / "var" / "product-bench"
        self.log_dir.mkdir(parents=True, exist_ok=True)

    def start(self, name: str, command: list[str]):
        log = open(self.log_dir / f"{name}.log", "wb")
        self.procs[name] = subprocess.Popen(
            command,
            cwd=ROOT,
            env=dict(os.environ),
            start_new_session=True,
            stdout=log,
            stderr=subprocess.STDOUT,
        )

    def start_web(self):
        self.start(
            "web",
            [
                sys.executable,
                "-m",
                "gunicorn",
                "config.wsgi",
                "--workers",
                str(GUNICORN_WORKERS),
                "--bind",
                f"127.0.0.1:{self.web_port}",
                "--log-level",
                "warning",
            ],
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.web_port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"gunicorn did not start: see {self.log_dir / 'web.log'}"
                    ) from None
                time.sleep(0.2)

    def start_workers(self):
        celery = run_stack.commands("127.0.0.1", self.web_port, WORKER_CONCURRENCY)
        default = os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "celery")
        self.start("worker", [*celery["worker"], "-Q", f"{default},durable-takeover"])
        self.start("llm-worker", celery["llm-worker"])
        self.start("sweep-worker", celery["sweep-worker"])
        self.start("beat", [*celery["beat"], "--schedule", str(self.log_dir / "beat-schedule")])

    def restart_workers(self, **env: str):
        """The Celery workers and beat again, with ``env`` (gunicorn keeps running)."""
        self.stop([name for name in self.procs if name != "web"])
        os.environ.update(env)
        self.start_workers()

    def stop(self, names: list[str] | None = None):
        procs = {name: self.procs.pop(name) for name in (names or list(self.procs))}
        for proc in procs.values():
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for proc in procs.values():
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()


def delivery(wa_id: str, n: int, messages: list[dict] | None = None) -> bytes:
    """One signed-to-be delivery from ``wa_id``: ``messages``, or a first text."""
    text = {
        "from": wa_id,
        "id": f"wamid.SOAK.{n}.{secrets.token_hex(4)}",
        "timestamp": str(int(time.time())),
        "type": "text",
        "text": {"body": "Oi, quero abrir uma conta PJ"},
    }
    return json.dumps(
        {
            "object": "whatsapp_business_account",
            "entry": [
                {
                    "id": "BENCH",
                    "changes": [
                        {
                            "field": "messages",
                            "value": {
                                "messaging_product": "whatsapp",
                                "metadata": {"phone_number_id": "BENCH"},
                                "contacts": [{"profile": {"name": f"Cliente {n}"}, "wa_id": wa_id}],
                                "messages": messages or [text],
                            },
                        }
                    ],
                }
            ],
        }
    ).encode()


class Poster:
    """Signed POSTs to the webhook; each answer's status and latency recorded."""

    def __init__(self, url: str):
        self.url = url
        self.secret = os.environ["WHATSAPP_APP_SECRET"].encode()
        self.answers: list[tuple[float, int, float]] = []  # (sent at, status, seconds)
        self.first_post: dict[str, float] = {}  # each number's first delivery: when it began
        self.lock = threading.Lock()

    def post(self, wa_id: str, n: int, messages: list[dict] | None = None):
        body = delivery(wa_id, n, messages)
        signature = "sha256=" + hmac.new(self.secret, body, hashlib.sha256).hexdigest()
        request = urllib.request.Request(
            self.url,
            data=body,
            method="POST",
            headers={"Content-Type": "application/json", "X-Hub-Signature-256": signature},
        )
        began = time.time()
        with self.lock:
            self.first_post.setdefault(wa_id, began)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                status = response.status
                response.read()
        except urllib.error.HTTPError as exc:
            status = exc.code
        except OSError:
            status = 0
        with self.lock:
            self.answers.append((began, status, time.time() - began))


def webhook_capacity(poster: Poster, seconds: float, first: int) -> dict:
    """Closed loop with one client per gunicorn worker: the rate the web tier answers at."""
    stop_at, count = time.monotonic() + seconds, [first]
    lock = threading.Lock()

    def client():
        while time.monotonic() < stop_at:
            with lock:
                n = count[0]
                count[0] += 1
            poster.post(f"5521{n:09d}", n)

    threads = [threading.Thread(target=client) for _ in range(GUNICORN_WORKERS)]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    took = time.monotonic() - began
    latencies = [s for _, status, s in poster.answers if status == 200]
    rate = len(latencies) / took
    return {
        "deliveries": len(poster.answers),
        "errors": sum(1 for _, status, _ in poster.answers if status != 200),
        "per_second": rate,
        "per_gunicorn_worker_per_second": rate / GUNICORN_WORKERS,
        "p50_ms": pct(latencies, 50) * 1000,
        "p99_ms": pct(latencies, 99) * 1000,
        "numbers": count[0] - first,
    }


def backlog() -> int:
    """Deliveries stored by the webhook and not yet processed by a worker."""
    connection.close()  # a fresh connection each poll: the bench outlives idle timeouts
    return WebhookDelivery.objects.filter(processed_at__isnull=True).count()


def soak(
    poster: Poster,
    fake: FakeGraphApi,
    rate: float,
    load_seconds: float,
    idle_seconds: float,
    first: int,
) -> dict:
    expected: set[str] = set()
    pool = ThreadPoolExecutor(max_workers=64)
    began = time.time()
    stop_at = time.monotonic() + load_seconds
    next_print = time.monotonic() + PROGRESS_SECONDS
    n = first
    offered_from = len(poster.answers)

    def progress(phase: str):
        greeted = fake.greeted()
        unprocessed = backlog()
        print(
            f"[soak] {time.time() - began:5.0f} s {phase}: {len(expected)} "
            f"offered, {sum(1 for to in expected if to in greeted)} "
            f"greeted, {unprocessed} deliveries not yet processed",
            flush=True,
        )

    start_mono = time.monotonic()
    while time.monotonic() < stop_at:
        due = start_mono + (n - first) / rate
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        wa_id = f"5511{n:09d}"
        expected.add(wa_id)
        pool.submit(poster.post, wa_id, n)
        n += 1
        if time.monotonic() >= next_print:
            progress("load")
            next_print += PROGRESS_SECONDS
    pool.shutdown(wait=True)
    load_ended = time.time()
    answers = poster.answers[offered_from:]
    during_load = sum(1 for to, at in fake.greeted().items() if to in expected and at <= load_ended)
    idle_until = time.monotonic() + idle_seconds
    while time.monotonic() < idle_until:
        greeted = fake.greeted()
        if all(to in greeted for to in expected) and backlog() == 0:
            break
        if time.monotonic() >= next_print:
            progress("idle")
            next_print += PROGRESS_SECONDS
        time.sleep(1)
    greeted = fake.greeted()
    mine = {to: at for to, at in greeted.items() if to in expected}
    sends_to = [to for _, to, _ in fake.sends if to in expected]
    latencies = sorted(s for _, status, s in answers if status == 200)
    last_greeting = max(mine.values()) if mine else load_ended
    greet_times = sorted(mine.values())
    return {
        "rate_offered": rate,
        "load_seconds": load_seconds,
        "idle_seconds": idle_seconds,
        "offered": len(expected),
        "answered_200": len(latencies),
        "errors": sum(1 for _, status, _ in answers if status != 200),
        "webhook_p50_ms": pct(latencies, 50) * 1000 if latencies else None,
        "webhook_p99_ms": pct(latencies, 99) * 1000 if latencies else None,
        "greeted": len(mine),
        "greeted_during_load": during_load,
        "greeting_rate_during_load": during_load / load_seconds,
        "greeting_rate_overall": (len(mine) - 1) / (greet_times[-1] - greet_times[0])
        if len(mine) > 1
        else None,
        "sends_per_greeted": len(sends_to) / max(len(mine), 1),
        "drain_seconds_after_load": last_greeting - load_ended,
        "all_greeted": len(mine) == len(expected),
        "deliveries_unprocessed": backlog(),
    }


def latencies(poster: Poster, fake: FakeGraphApi, options) -> dict:
    """What a customer and a reviewer wait for (product_latencies.py), printed as measured."""
    seconds, found = options.latency_seconds, {}

    def show(name: str, figures: dict):
        found[name] = figures
        p50, p99 = figures.get("p50_ms"), figures.get("p99_ms")
        shown = f"p50 {p50:.0f} ms, p99 {p99:.0f} ms" if p50 is not None else "no figure"
        print(f"  {name}: {shown} ({figures})", flush=True)

    print(
        f"latencies: WHATSAPP_SEND_RATE {options.latency_send_rate}/s, "
        f"{seconds:g} s at each rate ...",
        flush=True,
    )
    for n, rate in enumerate((20, 50)):
        show(
            f"greeting at {rate}/s",
            product_latencies.greeting_at(
                poster, fake, rate, seconds, 2_000_000 + n * 100_000, timeout=300
            ),
        )
    for n, rate in enumerate((50, 200)):
        show(
            f"webhook at {rate}/s",
            product_latencies.webhook_at(poster, rate, seconds, 3_000_000 + n * 100_000),
        )
    product_latencies.wait_for(lambda: backlog() == 0, timeout=600)
    show(
        "approval to message",
        product_latencies.approval_to_message(poster, fake, 40, 4_000_000, timeout=300),
    )
    return found


def health() -> str:
    return subprocess.run(
        [sys.executable, "manage.py", "durable", "health"],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
    ).stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--product", action="store_true", help="(how scripts/bench routes here)")
    parser.add_argument(
        "--soak", action="store_true", help="the full soak: 20 minutes of load, 20 idle"
    )
    parser.add_argument(
        "--rate", type=float, default=30.0, help="deliveries offered per second during the load"
    )
    parser.add_argument("--load-minutes", type=float, default=None, help="20 with --soak, else 2")
    parser.add_argument("--idle-minutes", type=float, default=None, help="20 with --soak, else 5")
    parser.add_argument(
        "--capacity-seconds",
        type=float,
        default=5.0,
        help="the closed-loop trial of the webhook (its conversations are greeted before the soak)",
    )
    parser.add_argument(
        "--latency-seconds",
        type=float,
        default=20.0,
        help="how long each fixed rate of the latency part is offered",
    )
    parser.add_argument(
        "--latency-send-rate",
        type=int,
        default=80,
        help="WHATSAPP_SEND_RATE during the latency part (80/s: a business number's default "
        "throughput on the Cloud API); the soak keeps the app's default, 20",
    )
    parser.add_argument(
        "--no-soak", action="store_true", help="capacity and latencies only (about 8 minutes)"
    )
    options = parser.parse_args()
    load_minutes = options.load_minutes or (20.0 if options.soak else 2.0)
    idle_minutes = options.idle_minutes or (20.0 if options.soak else 5.0)

    with connection.cursor() as cursor:  # a clean database: the schema dropped, migrated again
        cursor.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
    connection.close()
    call_command("migrate", verbosity=0)
    redis.Redis.from_url(os.environ["CELERY_BROKER_URL"]).flushdb()

    fake = FakeGraphApi(ROOT / "var" / "product-bench" / "tls")
    os.environ["WHATSAPP_API_BASE_URL"] = fake.url
    os.environ["WHATSAPP_MEDIA_HOSTS"] = fake.media_host
    os.environ["SSL_CERT_FILE"] = str(fake.certificate)  # the workers fetch media over https
    # Each customer here sends their documents in one delivery: the quiet period (30 s in
    # production) would only wait for more.
    os.environ["ONBOARDING_DOCUMENTS_QUIET_SECONDS"] = "1"
    # Every delivery here is a new customer: the hourly cap on new senders (an abuse guard,
    # 120 an hour by default) would hold all but the first 120 of them.
    os.environ["ONBOARDING_NEW_SENDERS_PER_HOUR"] = "100000000"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    stack = Stack(port)
    results = {
        "when": datetime.now(UTC).isoformat(),
        "cores": os.cpu_count(),
        "stack": {
            "gunicorn_sync_workers": GUNICORN_WORKERS,
            "default_worker_processes": WORKER_CONCURRENCY,
            "whatsapp_send_rate": int(os.environ.get("WHATSAPP_SEND_RATE", "20")),
        },
    }
    try:
        stack.start_web()
        poster = Poster(f"http://127.0.0.1:{port}/api/webhooks/whatsapp/")
        print(
            f"webhook capacity: {GUNICORN_WORKERS} clients, closed "
            f"loop, {options.capacity_seconds:.0f} s, no Celery "
            "worker yet (each delivery is stored for one) ...",
            flush=True,
        )
        results["webhook_capacity"] = capacity = webhook_capacity(
            poster, options.capacity_seconds, 0
        )
        print(
            f"  {capacity['per_second']:.0f} deliveries/s "
            f"({capacity['per_gunicorn_worker_per_second']:.0f} per "
            f"gunicorn worker), p50 {capacity['p50_ms']:.0f} ms, p99 "
            f"{capacity['p99_ms']:.0f} ms, {capacity['errors']} errors",
            flush=True,
        )
        os.environ["WHATSAPP_SEND_RATE"] = str(options.latency_send_rate)
        stack.start_workers()
        began, numbers = time.monotonic(), {f"5521{n:09d}" for n in range(capacity["numbers"])}
        while not numbers <= fake.greeted().keys():
            if time.monotonic() - began > 900:
                raise RuntimeError(
                    "the capacity trial's conversations were not all greeted in 15 minutes"
                )
            time.sleep(1)
        results["webhook_capacity"]["greeted_after_workers_started_s"] = took = (
            time.monotonic() - began
        )
        print(
            f"  its {len(numbers)} conversations greeted {took:.0f} s after the workers started",
            flush=True,
        )
        results["latencies"] = latencies(poster, fake, options)
        if not options.no_soak:
            stack.restart_workers(WHATSAPP_SEND_RATE="20")
            print(
                f"soak: {options.rate:.0f}/s for {load_minutes:g} "
                f"min, then up to {idle_minutes:g} min idle ...",
                flush=True,
            )
            soak_poster = Poster(poster.url)
            results["soak"] = soak(
                soak_poster,
                fake,
                options.rate,
                load_minutes * 60,
                idle_minutes * 60,
                first=1_000_000,
            )
        results["health_after"] = health()
    finally:
        stack.stop()
    print()
    for key, value in results.get("soak", {}).items():
        print(f"  {key}: {value:.2f}" if isinstance(value, float) else f"  {key}: {value}")
    print(results["health_after"])
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"product-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    path.write_text(json.dumps(results, indent=2))
    print(f"wrote {path.relative_to(ROOT)}")
    return 0 if results.get("soak", {}).get("all_greeted", True) else 1


if __name__ == "__main__":
    sys.exit(main())
