"""Trials, targets, the table and the SVG chart of a benchmark run: pure functions.

The table and <time>.svg of a run again:

.venv/bin/python benchmarks/report.py benchmarks/results/<time>.json
"""

import json
import statistics
import sys
from html import escape
from pathlib import Path

# A figure (or ratio) whose trials spread more than this around their median is unstable.
UNSTABLE_SPREAD = 0.15


def pct(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def summary(trials: list[float]) -> dict:
    """Median, min and max of one figure's trials, and their spread ((max - min) / median)."""
    median = statistics.median(trials)
    spread = (max(trials) - min(trials)) / abs(median) if median else float("inf")
    return {
        "median": median,
        "min": min(trials),
        "max": max(trials),
        "spread": spread,
        "trials": list(trials),
    }


def rate_of_parts(rates: list[float]) -> float:
    """A throughput trial's rate from its parts, each the same number of runs: all the runs
    over all the parts' seconds, which is the parts' harmonic mean (not their mean, which
    would weigh a fast part as much as a slow one that took longer)."""
    return len(rates) / sum(1 / rate for rate in rates)


def ratio(numerators: list[float], denominators: list[float]) -> dict:
    """The ratio trial by trial (trial i of A over trial i of B, taken next to each other)."""
    return summary([a / b for a, b in zip(numerators, denominators)])


def stable(*summaries: dict) -> bool:
    return all(s["spread"] <= UNSTABLE_SPREAD for s in summaries)


def verdict(met: bool, *evidence: dict, per_trial: list[bool] | None = None) -> str:
    """met / missed, or unstable when the trials behind it spread too much to say.

    ``per_trial`` says whether each trial alone met the target. Trials that spread but all
    miss the line are a target missed, whatever the noise (``missed, every trial``); trials
    that spread and all meet it are still not a target met (the rule is that only stable
    trials call one met), and say so (``unstable, every trial met``)."""
    if not stable(*evidence):
        if per_trial and not any(per_trial):
            return "missed, every trial"
        if per_trial and all(per_trial):
            return "unstable, every trial met"
        return "unstable"
    return "met" if met else "missed"


def targets(r: dict) -> list[tuple[str, str, str]]:
    """Issue 17's targets, as (target, measured, verdict); peer targets need --peers. A --quick
    run's verdicts are marked smoke: too few, too short trials to call a target met."""
    return _smoke_marked(r, _targets(r))


def _smoke_marked(r: dict, rows: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    if not r.get("quick"):
        return rows
    return [(target, measured, f"{verdict} (smoke)") for target, measured, verdict in rows]


def _targets(r: dict) -> list[tuple[str, str, str]]:
    main = r["layouts"][str(r["workers"])]
    rows = []
    if "dbos_direct" in main:
        vs_dbos = main["ours_vs_dbos_direct"]
        rows.append(
            (
                "3-step runs >= 2x DBOS direct",
                f"{vs_dbos['median']:.2f}x",
                verdict(
                    vs_dbos["median"] >= 2, vs_dbos, per_trial=[t >= 2 for t in vs_dbos["trials"]]
                ),
            )
        )
    vs_chain = main["ours_vs_chain"]
    rows.append(
        (
            "3-step runs >= 75% of the chain",
            f"{vs_chain['median']:.0%}",
            verdict(
                vs_chain["median"] >= 0.75,
                vs_chain,
                per_trial=[t >= 0.75 for t in vs_chain["trials"]],
            ),
        )
    )
    signal = r["signal"]
    if "dbos_resume_p50" in signal:
        rv = signal["resume_p50_vs_dbos"]
        rows.append(
            (
                "signal to resume p50 <= DBOS send->recv p50",
                f"{rv['median']:.2f}x",
                verdict(rv["median"] <= 1, rv, per_trial=[t <= 1 for t in rv["trials"]]),
            )
        )
    tail = signal["ours_p99_over_p50"]
    rows.append(
        (
            "signal to resume p99 <= 2x p50",
            f"{tail['median']:.2f}x",
            verdict(tail["median"] <= 2, tail, per_trial=[t <= 2 for t in tail["trials"]]),
        )
    )
    if "send_p50_vs_dbos" in signal:
        sv = signal["send_p50_vs_dbos"]
        rows.append(
            (
                "signal_send p50 <= DBOS send() p50",
                f"{sv['median']:.2f}x",
                verdict(sv["median"] <= 1, sv, per_trial=[t <= 1 for t in sv["trials"]]),
            )
        )
    over = r["per_step"]["over_floor_ms"]
    rows.append(
        (
            "per step <= floor + 0.3 ms",
            f"{over['median']:+.3f} ms",
            verdict(
                over["median"] <= 0.3,
                r["per_step"]["ours_ms"],
                r["per_step"]["floor_ms"],
                per_trial=[t <= 0.3 for t in over["trials"]],
            ),
        )
    )
    rows.extend(_idle_targets(r))
    return rows


def _idle_targets(r: dict) -> list[tuple[str, str, str]]:
    rows = []
    idle = _idle_trials(r)
    one = " (1 trial)" if len(idle["resume_vs_empty"]["trials"]) == 1 else ""
    ticks = [t <= 20 for t in idle["sweep_tick"]["trials_p50_ms"]]
    tick_verdict = "met" if all(ticks) else "missed" if not any(ticks) else "unstable"
    rows.append(
        (
            f"sweep tick <= 20 ms ({idle['runs']:,} waiting)",
            f"{idle['sweep_tick']['p50_ms']:.2f} ms",
            tick_verdict + (one or f" ({len(ticks)} trials)"),
        )
    )
    vs_empty = idle["resume_vs_empty"]
    rows.append(
        (
            f"signal to resume within 20% of empty ({idle['runs']:,} waiting)",
            f"{vs_empty['median']:.0%}",
            verdict(
                vs_empty["median"] <= 1.2,
                vs_empty,
                per_trial=[t <= 1.2 for t in vs_empty["trials"]],
            )
            + one,
        )
    )
    return rows


def _idle_trials(r: dict) -> dict:
    """The idle scale as trials. A run saved before it was (2026-12-02 07:14 and earlier)
    holds one trial, compared with the signal trials' p50: read as one trial of each side."""
    idle = r["idle"]
    if isinstance(idle["resume_vs_empty"], dict):
        return idle
    loaded, empty = [idle["resume_ms"]["p50"]], [r["signal"]["ours_p50"]["median"]]
    return {
        **idle,
        "sweep_tick": {**idle["sweep_tick"], "trials_p50_ms": [idle["sweep_tick"]["p50_ms"]]},
        "resume_p50_ms": summary(loaded),
        "empty_resume_p50_ms": summary(empty),
        "resume_vs_empty": ratio(loaded, empty),
    }


def _fig(s: dict, fmt: str) -> str:
    return f"{fmt.format(s['median'])} [{fmt.format(s['min'])}..{fmt.format(s['max'])}]"


def _ratio(s: dict | None, fmt: str = "{:.2f}x") -> str:
    if s is None:
        return ""
    text = fmt.format(s["median"])
    return text + (f" unstable ({s['spread']:.0%})" if s["spread"] > UNSTABLE_SPREAD else "")


def table(r: dict) -> str:
    """Each of our figures beside the floor's or the peer's and the ratio: median [min..max] of the
    trials."""
    rows = [("figure", "ours", "floor / peer", "ratio")]
    ps = r["per_step"]
    rows.append(
        (
            "per step (ms)",
            _fig(ps["ours_ms"], "{:.3f}"),
            "insert+commit " + _fig(ps["floor_ms"], "{:.3f}"),
            f"{ps['over_floor_ms']['median']:+.3f} ms",
        )
    )
    if "dbos_ms" in ps:
        rows.append(
            (
                "per step vs DBOS (ms)",
                _fig(ps["ours_ms"], "{:.3f}"),
                "DBOS " + _fig(ps["dbos_ms"], "{:.3f}"),
                _ratio(ps["ours_vs_dbos"]),
            )
        )
    rows.append(("per-step SQL statements", f"{ps['sql_per_step']:.2f}", "", ""))
    for workers, layout in sorted(r["layouts"].items(), key=lambda item: int(item[0])):
        label = f"3-step runs/s, {workers} proc"
        rows.append(
            (
                label,
                _fig(layout["ours"], "{:.0f}"),
                "chain " + _fig(layout["chain"], "{:.0f}"),
                _ratio(layout["ours_vs_chain"], "{:.0%}"),
            )
        )
        for peer in ("dbos_direct", "dbos_queue"):
            if peer in layout:
                rows.append(
                    (
                        label,
                        "",
                        peer.replace("_", " ").replace("dbos", "DBOS")
                        + " "
                        + _fig(layout[peer], "{:.0f}"),
                        _ratio(layout[f"ours_vs_{peer}"]),
                    )
                )
    fill = r["layouts"][str(r["workers"])].get("fill_ms_per_run")
    if fill:  # the producer, before the workers are continued (benchmarks/run.py's filled)
        rows.append(
            (
                "producer, ms per run started",
                "run_start " + _fig(fill["ours"], "{:.2f}"),
                "chain "
                + _fig(fill["chain"], "{:.2f}")
                + (
                    "; DBOS enqueue " + _fig(fill["dbos_queue"], "{:.2f}")
                    if "dbos_queue" in fill
                    else ""
                ),
                "",
            )
        )
    sig = r["signal"]
    rows.append(
        (
            "signal to resume p50 (ms)",
            _fig(sig["ours_p50"], "{:.1f}"),
            "DBOS send->recv " + _fig(sig["dbos_resume_p50"], "{:.1f}")
            if "dbos_resume_p50" in sig
            else "",
            _ratio(sig.get("resume_p50_vs_dbos")),
        )
    )
    rows.append(
        (
            "signal to resume p99 (ms)",
            _fig(sig["ours_p99"], "{:.1f}"),
            "DBOS send->recv " + _fig(sig["dbos_resume_p99"], "{:.1f}")
            if "dbos_resume_p99" in sig
            else "",
            _ratio(sig.get("resume_p99_vs_dbos")),
        )
    )
    rows.append(
        (
            "sender's call p50 (ms)",
            "signal_send " + _fig(sig["send_p50"], "{:.1f}"),
            "DBOS send() " + _fig(sig["dbos_send_p50"], "{:.1f}") if "dbos_send_p50" in sig else "",
            _ratio(sig.get("send_p50_vs_dbos")),
        )
    )
    late = r["timer_lateness_s"]
    rows.append(
        ("timer lateness p50 / p99 (s, 1 trial)", f"{late['p50']:.2f} / {late['p99']:.2f}", "", "")
    )
    idle = _idle_trials(r)
    rows.append(
        (
            f"sweep tick, empty / {idle['runs']:,} waiting (ms)",
            f"{r['sweep_tick_empty']['p50_ms']:.2f} / {idle['sweep_tick']['p50_ms']:.2f}",
            "",
            "",
        )
    )
    rows.append(
        (
            f"signal to resume p50, {idle['runs']:,} waiting (ms)",
            _fig(idle["resume_p50_ms"], "{:.1f}"),
            "empty " + _fig(idle["empty_resume_p50_ms"], "{:.1f}"),
            _ratio(idle["resume_vs_empty"], "{:.0%} of empty"),
        )
    )
    rows.append(("database size per waiting run", f"{idle['bytes_per_run']:.0f} bytes", "", ""))
    rows.append(("worker memory (RSS, all processes)", f"{r['worker_rss_mib']:.0f} MiB", "", ""))
    lines = _columns(rows)
    lines.append("")
    lines.append(
        f"median [min..max] of {r['trials']} trials; a ratio is unstable when its trials spread > "
        f"{UNSTABLE_SPREAD:.0%}"
    )
    lines.append("")
    lines.extend(_columns([("target (issue 17, item 3)", "measured", "verdict")] + targets(r)))
    return "\n".join(lines)


def idle_table(r: dict) -> str:
    """An idle-scale-only run (``--idle-only``): its figures, the relations' sizes and its
    two targets."""
    idle = r["idle"]
    rows = [("figure", "measured")]
    rows.append(
        (
            f"sweep tick p50, empty / {idle['runs']:,} waiting (ms)",
            f"{r['sweep_tick_empty']['p50_ms']:.2f} / {idle['sweep_tick']['p50_ms']:.2f}"
            f" (max {idle['sweep_tick']['max_ms']:.2f})",
        )
    )
    rows.append(
        (
            "signal to resume p50, waiting / empty (ms)",
            _fig(idle["resume_p50_ms"], "{:.1f}")
            + " / "
            + _fig(idle["empty_resume_p50_ms"], "{:.1f}"),
        )
    )
    resume = idle["resume_ms"]
    rows.append(
        (
            "signal to resume p95 / p99, waiting (ms)",
            f"{resume['p95']:.1f} / {resume['p99']:.1f}",
        )
    )
    rows.append(("database size per waiting run", f"{idle['bytes_per_run']:.0f} bytes"))
    if "create_seconds" in idle:
        rows.append(("made in (INSERT ... SELECT, vacuum)", f"{idle['create_seconds']:.0f} s"))
    for table, size in idle.get("sizes", {}).items():
        rows.append(
            (f"{table}: heap / TOAST and maps", f"{_mib(size['heap'])} / {_mib(size['toast'])}")
        )
        for index, used in size["indexes"].items():
            rows.append((f"  {index}", _mib(used)))
    rows.append(("worker memory (RSS, all processes)", f"{r['worker_rss_mib']:.0f} MiB"))
    lines = _columns(rows)
    lines.append("")
    lines.append(f"median [min..max] of {r['trials']} trials")
    lines.append("")
    rows = _smoke_marked(r, _idle_targets(r))
    lines.extend(_columns([("target (issue 38, item 5)", "measured", "verdict")] + rows))
    return "\n".join(lines)


def _mib(size: int) -> str:
    return f"{size / 2**20:,.0f} MiB"


def _columns(rows) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]


# --- the chart ---------------------------------------------------------------------------

SERIES = [
    ("ours", "ours (durable)", "#1f77b4"),
    ("chain", "plain Celery chain", "#7f7f7f"),
    ("dbos_direct", "DBOS direct", "#d62728"),
    ("dbos_queue", "DBOS queue", "#ff7f0e"),
]


def caption(r: dict) -> str:
    """What kind of run, when, and how loaded the machine was: a chart is read with these."""
    machine = r["machine"]
    load = f"load average {machine['load_average'][0]:.1f}"
    if "load_average_after" in machine:
        load += f" at start, {machine['load_average_after'][0]:.1f} at end"
    return (
        f"{'--quick smoke run' if r.get('quick') else 'full run'}"
        f"{' --peers' if r.get('peers') else ''}, "
        f"{r['when'][:16].replace('T', ' ')} UTC, {machine['cores']} cores, {load}; "
        f"median of {r['trials']} trials, bars min..max"
    )


def chart_svg(r: dict) -> str:
    """Runs/s against worker processes (median, min..max bar), and latency percentiles."""
    width, height = 900, 420
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2}" y="20" text-anchor="middle" '
        f'font-size="13">{escape(caption(r))}</text>',
    ]
    out += _throughput_panel(r, x0=60, y0=50, w=360, h=300)
    out += _latency_panel(r, x0=520, y0=50, w=340, h=300)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _axis(x0, y0, w, h, top, ylabel, title):
    out = [
        f'<text x="{x0 + w / 2}" y="{y0 - 8}" text-anchor="middle" '
        f'font-weight="bold">{escape(title)}</text>',
        f'<line x1="{x0}" y1="{y0 + h}" x2="{x0 + w}" y2="{y0 + h}" stroke="black"/>',
        f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y0 + h}" stroke="black"/>',
        f'<text x="{x0 - 45}" y="{y0 + h / 2}" transform="rotate(-90 {x0 - 45} {y0 + h / 2})" '
        f'text-anchor="middle">{escape(ylabel)}</text>',
    ]
    for i in range(5):
        value = top * i / 4
        y = y0 + h - h * i / 4
        out.append(f'<line x1="{x0 - 4}" y1="{y}" x2="{x0 + w}" y2="{y}" stroke="#ddd"/>')
        out.append(f'<text x="{x0 - 6}" y="{y + 4}" text-anchor="end">{value:g}</text>')
    return out


def _nice_top(value: float) -> float:
    step = 10 ** max(0, len(str(int(value))) - 1)
    return max(step, (int(value / step) + 1) * step)


def _throughput_panel(r, x0, y0, w, h):
    layouts = sorted(r["layouts"].items(), key=lambda item: int(item[0]))
    present = [s for s in SERIES if any(s[0] in layout for _, layout in layouts)]
    top = _nice_top(
        max(layout[key]["max"] for _, layout in layouts for key, _, _ in present if key in layout)
    )
    out = _axis(x0, y0, w, h, top, "3-step runs/s", "throughput vs worker processes")
    xs = {workers: x0 + w * (i + 0.5) / len(layouts) for i, (workers, _) in enumerate(layouts)}
    for workers, x in xs.items():
        out.append(f'<text x="{x}" y="{y0 + h + 16}" text-anchor="middle">{workers}</text>')
    out.append(
        f'<text x="{x0 + w / 2}" y="{y0 + h + 34}" text-anchor="middle">worker processes</text>'
    )

    def y(value):
        return y0 + h - h * value / top

    for n, (key, label, colour) in enumerate(present):
        points = [(xs[workers], layout[key]) for workers, layout in layouts if key in layout]
        out.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="'
            + " ".join(f"{x:.1f},{y(s['median']):.1f}" for x, s in points)
            + '"/>'
        )
        for x, s in points:
            out.append(
                f'<line x1="{x}" y1="{y(s["min"]):.1f}" x2="{x}" '
                f'y2="{y(s["max"]):.1f}" stroke="{colour}"/>'
            )
            out.append(f'<circle cx="{x}" cy="{y(s["median"]):.1f}" r="3" fill="{colour}"/>')
        out.append(
            f'<rect x="{x0 + 8}" y="{y0 + 6 + n * 16}" width="10" height="10" fill="{colour}"/>'
        )
        out.append(f'<text x="{x0 + 22}" y="{y0 + 15 + n * 16}">{escape(label)}</text>')
    return out


def _latency_panel(r, x0, y0, w, h):
    sig = r["signal"]
    groups = [("signal to resume", "ours", sig["ours_percentiles"], "#1f77b4")]
    if "dbos_percentiles" in sig:
        groups.append(("DBOS send->recv", "dbos", sig["dbos_percentiles"], "#d62728"))
    groups.append(("signal_send call", "send", sig["send_percentiles"], "#6baed6"))
    if "dbos_send_percentiles" in sig:
        groups.append(("DBOS send() call", "dsend", sig["dbos_send_percentiles"], "#f4a582"))
    top = _nice_top(max(v for _, _, p, _ in groups for v in p.values()))
    out = _axis(x0, y0, w, h, top, "ms", "latency percentiles (pooled trials)")
    names = ["p50", "p95", "p99"]
    slot = w / len(names)
    bar = slot / (len(groups) + 1)
    for i, name in enumerate(names):
        out.append(
            f'<text x="{x0 + slot * (i + 0.5)}" y="{y0 + h + 16}" '
            f'text-anchor="middle">{name}</text>'
        )
        for j, (_, _, values, colour) in enumerate(groups):
            value = values[name]
            bx = x0 + slot * i + bar * (j + 0.5)
            out.append(
                f'<rect x="{bx:.1f}" y="{y0 + h - h * value / top:.1f}" width="{bar * 0.9:.1f}" '
                f'height="{h * value / top:.1f}" fill="{colour}"/>'
            )
    for n, (label, _, _, colour) in enumerate(groups):
        out.append(
            f'<rect x="{x0 + 8}" y="{y0 + 6 + n * 16}" width="10" height="10" fill="{colour}"/>'
        )
        out.append(f'<text x="{x0 + 22}" y="{y0 + 15 + n * 16}">{escape(label)}</text>')
    return out


if __name__ == "__main__":
    for name in sys.argv[1:]:
        path = Path(name)
        run = json.loads(path.read_text())
        if run.get("idle_only"):
            print(idle_table(run))
            continue
        print(table(run))
        path.with_suffix(".svg").write_text(chart_svg(run))
        print(f"\nwrote {path.with_suffix('.svg')}")
