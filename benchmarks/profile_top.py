"""The top frames of py-spy's collapsed stacks (./scripts/bench --profile writes them to
var/profile/*.txt).

    .venv/bin/python benchmarks/profile_top.py var/profile/ours-worker.txt [--top 15]

Prints, as a share of the samples where the process was busy: the functions the time was
spent in (self), the same grouped by package, and the functions it was spent under
(inclusive, counted once per stack; frames under which nearly every sample sits, such as
the worker's entry point, are left out).
"""

import argparse
import re
from collections import Counter

LINE = re.compile(r":\d+\)$")


def frame_name(frame: str) -> str:
    """'advance (durable/runtime/executor.py:120)' -> 'advance (durable/runtime/executor.py)': a
    function, not a line."""
    name = LINE.sub(")", frame.strip())
    return re.sub(r"\(/.*?/(site-packages|wt-[^/]+|main)/", "(", name)


def package(frame: str) -> str:
    """'advance (durable/runtime/executor.py)' -> 'durable'; the standard library is 'stdlib'."""
    inner = frame[frame.rfind("(") + 1 :]
    return inner.split("/")[0] if "/" in inner and not inner.startswith("/") else "stdlib"


def top_frames(path: str) -> tuple[int, Counter, Counter, Counter]:
    total, own, under, packages = 0, Counter(), Counter(), Counter()
    with open(path) as stacks:
        for line in stacks:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not stack:
                continue
            samples = int(count)
            frames = [frame_name(f) for f in stack.split(";") if f.strip()]
            total += samples
            own[frames[-1]] += samples
            packages[package(frames[-1])] += samples
            for frame in set(frames):
                under[frame] += samples
    return total, own, under, packages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--top", type=int, default=15)
    options = parser.parse_args()
    for path in options.paths:
        total, own, under, packages = top_frames(path)
        under = Counter({frame: n for frame, n in under.items() if n < 0.9 * total})
        print(f"## {path}: {total} busy samples")
        for title, counter in (("self", own), ("self, by package", packages), ("inclusive", under)):
            print(f"\n{title}:")
            for frame, samples in counter.most_common(options.top):
                print(f"  {samples / total:6.1%}  {frame}")
        print()


if __name__ == "__main__":
    main()
