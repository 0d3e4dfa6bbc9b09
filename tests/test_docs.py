"""The docs are guides a newcomer follows to the letter: every internal link leads somewhere,
and every command they show exists and takes the flags shown."""

import argparse
import re
from pathlib import Path

import pytest
from django.core.management import get_commands, load_command_class

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted(
    [
        *ROOT.glob("*.md"),
        *(ROOT / "docs").rglob("*.md"),
        *(ROOT / "benchmarks").rglob("*.md"),
        *(ROOT / "durable").glob("*.md"),
        *(ROOT / "examples").rglob("*.md"),
    ]
)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"```.*?```", re.DOTALL)
MANAGE = re.compile(r"manage\.py\s+([^`|\n]*)")
SCRIPT = re.compile(r"\./scripts/([\w-]+)([^`|\n]*)")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
SUBCOMMAND = re.compile(r"^[a-z][a-z0-9_-]*$")
TOP_LEVEL = sorted(path.name for path in ROOT.iterdir() if not path.name.startswith("."))
REPO_PATH = re.compile(r"`((?:{})/[\w./-]*)`".format("|".join(map(re.escape, TOP_LEVEL))))
# What the app and the bench write as they run (kept out of git): named, never shipped.
OUTPUTS = ("var/", "benchmarks/results/")


def pages():
    return [pytest.param(page, id=str(page.relative_to(ROOT))) for page in dict.fromkeys(PAGES)]


def prose(text: str) -> str:
    """The page without its code blocks: a link inside an example is not a link."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {
        slug(line.lstrip("#"))
        for line in prose(page.read_text()).splitlines()
        if line.startswith("#")
    }


def command_text(line: str) -> str:
    """What is typed: the line before its comment."""
    return re.split(r"\s#\s|\s{2,}#", line)[0]


@pytest.mark.parametrize("page", pages())
def test_every_internal_link_leads_to_a_file_and_a_heading_that_exist(page):
    broken = []
    for target in LINK.findall(prose(page.read_text())):
        if re.match(r"^[a-z]+:", target):  # https:, mailto:: not ours to check offline
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading #{anchor} in {linked.name}")
    assert not broken, f"{page.name}: " + "; ".join(broken)


@pytest.mark.parametrize("page", pages())
def test_every_file_the_page_names_is_in_the_repository(page):
    """A path in backticks (`processes/onboarding/steps.py`, `approvals/migrations/0004`) is a
    link a reader follows by hand: it must lead to a file, or a file it is the start of."""
    missing = [
        path
        for path in dict.fromkeys(REPO_PATH.findall(page.read_text()))
        if not path.startswith(OUTPUTS)
        and not (ROOT / path).exists()
        and not list((ROOT / path).parent.glob((ROOT / path).name + "*"))
    ]
    assert not missing, f"{page.name} names files that do not exist: {', '.join(missing)}"


def parser_options(parser: argparse.ArgumentParser, words: list[str]) -> tuple[set[str], list[str]]:
    """The options the (sub)command the words name accepts, and the words that named it."""
    path = []
    for word in words:
        subparsers = next(
            (
                action
                for action in parser._actions
                if isinstance(action, argparse._SubParsersAction)
            ),
            None,
        )
        if subparsers is None or word not in subparsers.choices:
            break
        parser = subparsers.choices[word]
        path.append(word)
    return {option for action in parser._actions for option in action.option_strings}, path


def has_subcommands(parser: argparse.ArgumentParser, path: list[str]) -> bool:
    for word in path:
        parser = next(
            action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
        ).choices[word]
    return any(isinstance(action, argparse._SubParsersAction) for action in parser._actions)


@pytest.mark.parametrize("page", pages())
def test_every_manage_py_command_shown_exists_and_takes_the_flags_shown(page):
    commands = get_commands()
    wrong = []
    for shown in MANAGE.findall(page.read_text()):
        typed = command_text(shown).split()
        if not typed or not SUBCOMMAND.match(typed[0]):
            continue  # "manage.py <command>" in prose
        name, words = typed[0], [word for word in typed[1:] if not word.startswith(("-", "[", "<"))]
        if name not in commands:
            wrong.append(f"manage.py {name}: no such command")
            continue
        parser = load_command_class(commands[name], name).create_parser("manage.py", name)
        options, path = parser_options(parser, words)
        if (
            has_subcommands(parser, path)
            and words[len(path) :]
            and SUBCOMMAND.match(words[len(path)])
            and words[len(path)] == words[len(path)].lower()
            and not words[len(path)].isupper()
        ):
            wrong.append(
                f"manage.py {name} {' '.join(path + [words[len(path)]])}: no such subcommand"
            )
        for flag in FLAG.findall(" ".join(typed)):
            if flag not in options:
                wrong.append(f"manage.py {name} {' '.join(path)}: no option {flag}")
    assert not wrong, f"{page.name}: " + "; ".join(sorted(set(wrong)))


def script_sources(name: str) -> str:
    """The script and the Python files it runs: where its flags are read."""
    script = ROOT / "scripts" / name
    text = script.read_text()
    for path in set(re.findall(r"(?:benchmarks|scripts)/[\w/]+\.py", text)):
        if (ROOT / path).exists():
            text += (ROOT / path).read_text()
    return text


@pytest.mark.parametrize("page", pages())
def test_every_script_shown_exists_and_reads_the_flags_shown(page):
    wrong = []
    for name, rest in SCRIPT.findall(page.read_text()):
        script = ROOT / "scripts" / name
        if not script.exists() or not script.stat().st_mode & 0o111:
            wrong.append(f"./scripts/{name}: no such executable script")
            continue
        sources = script_sources(name)
        wrong += [
            f"./scripts/{name}: {flag} is read nowhere"
            for flag in FLAG.findall(command_text(rest))
            if flag not in sources
        ]
    assert not wrong, f"{page.name}: " + "; ".join(sorted(set(wrong)))
