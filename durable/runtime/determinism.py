"""Determinism rules: reads a workflow's body (AST) for calls that break replay.

Code outside a step is a deterministic script: it runs again on every replay, so a clock
read, a random draw, a new UUID, a network call, a file or a database query made there
gives a different answer the next time. The system check (``durable.surfaces.checks``)
names each one with its file, line and the fix; strict mode (``durable.runtime.strict``)
refuses the call as it happens. A comment ``# durable: allow`` on the line silences it.
"""

import ast
import builtins
import inspect
import textwrap
import tokenize
import types
from dataclasses import dataclass
from io import StringIO
from pathlib import Path

from durable import conf

ALLOW_MARKER = "durable: allow"


@dataclass(frozen=True)
class Rule:
    id: str
    what: str
    fix: str


CLOCK = Rule(
    "durable.W001",
    "reads the clock",
    "use workflow.now() (recorded in the journal), or read the time inside a step",
)
RANDOM = Rule(
    "durable.W002", "draws a random number", "use workflow.random(), or draw it inside a step"
)
UUID = Rule("durable.W003", "makes a new UUID", "use workflow.uuid4(), or make it inside a step")
SECRETS = Rule(
    "durable.W004",
    "generates secret bytes",
    "generate them inside a step (workflow.step(make_token)) so the journal records them",
)
NETWORK = Rule(
    "durable.W005",
    "calls the network",
    "make the call inside a step: workflow.step(fetch, ...), with an idempotency key for writes",
)
FILES = Rule("durable.W006", "opens a file", "read or write the file inside a step")
DATABASE = Rule(
    "durable.W007",
    "queries the database",
    "move the query into a step (atomic=True for writes to our own database)",
)

RULES = (CLOCK, RANDOM, UUID, SECRETS, NETWORK, FILES, DATABASE)

# Fully qualified callables -> rule. Those in NO_ARGUMENT_ONLY are deterministic when given
# a value (time.localtime(ts)) and read the clock only when called without one.
EXACT = {
    "datetime.datetime.now": CLOCK,
    "datetime.datetime.utcnow": CLOCK,
    "datetime.datetime.today": CLOCK,
    "datetime.date.today": CLOCK,
    "time.time": CLOCK,
    "time.time_ns": CLOCK,
    "time.monotonic": CLOCK,
    "time.monotonic_ns": CLOCK,
    "time.perf_counter": CLOCK,
    "time.perf_counter_ns": CLOCK,
    "time.process_time": CLOCK,
    "time.process_time_ns": CLOCK,
    "time.localtime": CLOCK,
    "time.gmtime": CLOCK,
    "time.ctime": CLOCK,
    "django.utils.timezone.now": CLOCK,
    "django.utils.timezone.localtime": CLOCK,
    "django.utils.timezone.localdate": CLOCK,
    "uuid.uuid1": UUID,
    "uuid.uuid4": UUID,
    "os.urandom": SECRETS,
    "builtins.open": FILES,
    "io.open": FILES,
    "os.open": FILES,
    "django.db.connection.cursor": DATABASE,
}
NO_ARGUMENT_ONLY = {
    "time.localtime",
    "time.gmtime",
    "time.ctime",
    "django.utils.timezone.localtime",
    "django.utils.timezone.localdate",
}
PREFIXES = (
    ("random.", RANDOM),
    ("secrets.", SECRETS),
    ("requests.", NETWORK),
    ("httpx.", NETWORK),
    ("urllib.request.", NETWORK),
    ("urllib3.", NETWORK),
    ("http.client.", NETWORK),
    ("socket.", NETWORK),
    ("aiohttp.", NETWORK),
)
DETERMINISTIC = ("random.Random", "requests.exceptions.", "httpx.URL")
ORM_MANAGERS = {"objects", "_default_manager", "_base_manager"}
ORM_INSTANCE_METHODS = {"save", "delete", "refresh_from_db"}


@dataclass(frozen=True)
class Finding:
    rule: Rule
    call: str
    path: str
    line: int

    def message(self) -> str:
        return (
            f"{self.path}:{self.line}: {self.call}() in the workflow body "
            f"{self.rule.what}; a replay would get a different answer"
        )


def rule_for(qualified: str, *, has_arguments: bool = False) -> Rule | None:
    """The rule a fully qualified callable breaks, or None (shared with strict mode)."""
    if qualified in EXACT:
        if qualified in NO_ARGUMENT_ONLY and has_arguments:
            return None
        return EXACT[qualified]
    if any(qualified.startswith(prefix) for prefix in DETERMINISTIC):
        return None
    for prefix, rule in PREFIXES:
        if qualified.startswith(prefix):
            return rule
    return None


def display_path(filename: str) -> str:
    root = conf.base_dir()
    if root is None:
        return filename
    try:
        return str(Path(filename).resolve().relative_to(root.resolve()))
    except ValueError:
        return filename


def _allowed_lines(source: str) -> set[int]:
    lines = set()
    try:
        for token in tokenize.generate_tokens(StringIO(source).readline):
            if token.type == tokenize.COMMENT and ALLOW_MARKER in token.string:
                lines.add(token.start[0])
    except (tokenize.TokenError, IndentationError):
        pass
    return lines


def _module_aliases(module: types.ModuleType | None) -> dict[str, str]:
    """Names bound by the module's top-level imports -> what they import."""
    if module is None:
        return {}
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError, SyntaxError):
        return {}
    aliases: dict[str, str] = {}
    pending = list(tree.body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        _bind_imports(node, aliases)
        pending.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt))
    return aliases


def _bind_imports(node: ast.AST, aliases: dict[str, str]) -> None:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                aliases[alias.asname] = alias.name
            else:
                root = alias.name.split(".")[0]
                aliases[root] = root
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
        for alias in node.names:
            aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"


def _qualified_from_object(value) -> str | None:
    if isinstance(value, types.ModuleType):
        return value.__name__
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str):
        return f"{module}.{qualname}"
    return None


def _dotted(node: ast.AST) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


class _BodyVisitor(ast.NodeVisitor):
    """Walks the code a workflow body runs itself, skipping what runs inside steps."""

    def __init__(self, resolve, step_arguments: set[str]):
        self.resolve = resolve
        self.step_arguments = step_arguments
        self.hits: list[tuple[ast.Call, str, Rule]] = []

    def visit_FunctionDef(self, node):
        if node.name in self.step_arguments:
            return  # a nested function handed to workflow.step runs inside the step
        for statement in node.body:
            self.visit(statement)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        self.visit(node.body)

    def visit_Call(self, node: ast.Call):
        if self._is_step(node):
            self.visit(node.func)
            for argument in [*node.args, *(keyword.value for keyword in node.keywords)]:
                if not isinstance(argument, ast.Lambda):  # a lambda handed to a step runs there
                    self.visit(argument)
            return
        hit = self._classify(node)
        if hit is not None:
            self.hits.append((node, *hit))
        self.generic_visit(node)

    def _is_step(self, node: ast.Call) -> bool:
        parts = _dotted(node.func)
        if not parts or parts[-1] != "step" or len(parts) < 2:
            return False
        root = self.resolve(parts[:-1]) or ""
        return root.startswith("durable") or parts[-2] == "workflow"

    def _classify(self, node: ast.Call) -> tuple[str, Rule] | None:
        func = node.func
        if isinstance(func, ast.Attribute):
            owner = func.value
            if isinstance(owner, ast.Attribute) and owner.attr in ORM_MANAGERS:
                return ast.unparse(func), DATABASE
            if func.attr in ORM_INSTANCE_METHODS:
                qualified = self.resolve(_dotted(func) or [])
                if qualified is None or not qualified.startswith("durable"):
                    return ast.unparse(func), DATABASE
        parts = _dotted(func)
        if not parts:
            return None
        qualified = self.resolve(parts)
        if qualified is None:
            return None
        rule = rule_for(qualified, has_arguments=bool(node.args or node.keywords))
        return (ast.unparse(func), rule) if rule else None


def _local_names(function: ast.AST) -> set[str]:
    names = set()
    arguments = function.args
    for argument in [
        *arguments.posonlyargs,
        *arguments.args,
        *arguments.kwonlyargs,
        arguments.vararg,
        arguments.kwarg,
    ]:
        if argument is not None:
            names.add(argument.arg)
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not function:
            names.add(node.name)
    return names


def _step_arguments(function: ast.AST, is_step) -> set[str]:
    names = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and is_step(node):
            for argument in [*node.args, *(keyword.value for keyword in node.keywords)]:
                names.update(n.id for n in ast.walk(argument) if isinstance(n, ast.Name))
    return names


def inspect_function(fn) -> list[Finding]:
    """Calls in ``fn``'s own body that break replay, with file and line."""
    try:
        source_lines, first_line = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or inspect.getfile(fn)
    except (OSError, TypeError):
        return []
    source = textwrap.dedent("".join(source_lines))
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []  # a lambda inside a larger expression: nothing we can read on its own
    function = next(
        (node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))),
        None,
    )
    if function is None:
        return []
    aliases = _module_aliases(inspect.getmodule(fn))
    own_imports: dict[str, str] = {}
    for node in ast.walk(function):
        _bind_imports(node, own_imports)
    aliases.update(own_imports)
    local = _local_names(function) - set(own_imports)
    namespace = getattr(fn, "__globals__", {})

    def resolve(parts: list[str]) -> str | None:
        if not parts:
            return None
        root, rest = parts[0], parts[1:]
        if root in local:
            return None
        if root in namespace and root not in own_imports:
            value = namespace[root]
            while (
                rest
                and isinstance(value, types.ModuleType)
                and isinstance(getattr(value, rest[0], None), types.ModuleType)
            ):
                value, rest = getattr(value, rest[0]), rest[1:]  # t.time.time -> time.time
            base = _qualified_from_object(value)
        elif root in aliases:
            base = aliases[root]
        elif hasattr(builtins, root):
            base = f"builtins.{root}"
        else:
            return None
        return ".".join([base, *rest]) if base else None

    visitor = _BodyVisitor(resolve, set())
    visitor.step_arguments = _step_arguments(function, visitor._is_step)
    for statement in function.body:
        visitor.visit(statement)

    allowed = _allowed_lines(source)
    path = display_path(filename)
    findings, seen = [], set()
    for node, call, rule in visitor.hits:
        span = range(node.lineno, (node.end_lineno or node.lineno) + 1)
        if allowed.intersection(span):
            continue
        line = node.lineno + first_line - 1
        if (line, rule.id) in seen:
            continue
        seen.add((line, rule.id))
        findings.append(Finding(rule=rule, call=call, path=path, line=line))
    return findings
