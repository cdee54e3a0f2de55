"""Mutants of the exercises' reference solutions: does each check fail an answer that is slightly
wrong?

A mutant is the solution with one small change a learner could make: ``>`` for ``>=``, a
watermark delay one second longer, a dropped ``withWatermark``, a grouping key left out. A
check that still says "passed" lets that mistake through (or the change cannot matter: an
equivalent mutant, listed with its reason in ``exercises/equivalent_mutants.json``).

    python -m tools.mutants list [ID ...] [--names | --diff]   # the mutants, no Spark
    python -m tools.mutants report [ID ...] [--sample] [-v]    # run the checks, kill rates

The mutator is a syntax-tree walk (``ast``); each change is spliced into the solution's own text,
so a mutant keeps its comments and differs from the solution in one place. A mutant's name says
the operator, where (the function or constant), the original code and the mutated code, e.g.
``compare in build_large_payments: F.col('amount') > LARGE_AMOUNT -> F.col('amount') >=
LARGE_AMOUNT``; no line number, so it stays the same when lines move (``#2`` marks a second
identical change in the same place). The tests are tests/test_mutants.py and docs/MUTANTS.md
describes the lane.
"""

from __future__ import annotations

import argparse
import ast
import copy
import difflib
import hashlib
import json
import logging
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import tools  # noqa: F401  (puts streaming_tutorial/ on sys.path, for report)

ROOT = Path(__file__).resolve().parent.parent
EQUIVALENT_FILE = ROOT / "exercises" / "equivalent_mutants.json"
SAMPLE_SIZE = 3  # mutants per exercise in the mutants_sample lane


@dataclass(frozen=True)
class Mutant:
    name: str  # "operator in scope: original -> mutated", stable when lines move
    operator: str
    line: int  # the line of the solution that changed
    source: str  # the whole mutated module


@dataclass
class Site:
    """One change an operator proposes: ``node`` becomes ``new`` (None: the statement goes)."""

    node: ast.AST
    new: ast.AST | None
    before: str  # what the mutant's name shows of the original ...
    after: str  # ... and of the change
    text: str | None = None  # the new code as spliced in (default: ``new`` unparsed)


# --- The module being mutated: its tree and what the operators look up --------------------------


class Module:
    def __init__(self, source: str):
        self.source = source
        self.tree = ast.parse(source)
        self.nodes = list(ast.walk(self.tree))
        self.index = {id(node): number for number, node in enumerate(self.nodes)}
        self.parents = {
            id(child): node for node in self.nodes for child in ast.iter_child_nodes(node)
        }
        # Docstrings (any bare string statement) and imports are never mutated.
        self.skipped = {
            id(inner)
            for node in self.nodes
            if isinstance(node, (ast.Import, ast.ImportFrom))
            or (isinstance(node, ast.Expr) and is_string(node.value))
            for inner in ast.walk(node)
        }
        self.constants = single_assignments(self.tree.body, constants_only=True)
        self.module_values = single_assignments(self.tree.body, constants_only=False)
        # Names bound by an import of a lower-case name (a module or a function, as in
        # `functions as F`): F.filter(...) is a function of F, not a step of a chain.
        self.imported_modules = {
            alias.asname or alias.name.split(".")[0]
            for node in self.tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for alias in node.names
            if alias.name.split(".")[-1][:1].islower()
        }
        self.line_starts = [0]
        for line in source.splitlines(keepends=True):
            self.line_starts.append(self.line_starts[-1] + len(line))
        self.lines = source.splitlines(keepends=True)

    def walk(self, node_type=ast.AST) -> Iterator:
        """The nodes of a type that may be mutated, in the order of the text (by where they end:
        a chain's steps in the order they are written)."""
        found = [
            node
            for node in self.nodes
            if isinstance(node, node_type)
            and id(node) not in self.skipped
            and hasattr(node, "lineno")
        ]
        return iter(sorted(found, key=text_order))

    def parent(self, node: ast.AST) -> ast.AST | None:
        return self.parents.get(id(node))

    def scope(self, node: ast.AST) -> str:
        """Where a node is: its function or class (dotted), or the module-level name it is
        assigned to, or <module>."""
        names = []
        top = node
        while (parent := self.parent(top)) is not None:
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.append(parent.name)
            if parent is self.tree:
                break
            top = parent
        if names:
            return ".".join(reversed(names))
        bound = bound_names(top)
        return bound[0] if len(bound) == 1 else "<module>"

    def top_names(self, node: ast.AST) -> list[str]:
        """The names the module-level statement holding ``node`` binds."""
        top = node
        while (parent := self.parent(top)) is not None and parent is not self.tree:
            top = parent
        return bound_names(top)

    def resolve(self, node: ast.AST, *, constants_only: bool) -> ast.AST:
        """A Name assigned once (in its function, else at module level) -> its value."""
        if not isinstance(node, ast.Name):
            return node
        if not constants_only:
            function = self.enclosing_function(node)
            if function is not None:
                local = single_assignments(function.body, constants_only=False, deep=True)
                if node.id in local:
                    return local[node.id]
            return self.module_values.get(node.id, node)
        return self.constants.get(node.id, node)

    def enclosing_function(self, node: ast.AST):
        while (node := self.parent(node)) is not None:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return node
        return None

    def text_of(self, node: ast.AST) -> str:
        """The source text of ``node``, comments and layout kept."""
        start = self.offset(node.lineno, node.col_offset)
        return self.source[start : self.offset(node.end_lineno, node.end_col_offset)]

    def text_between(self, first: ast.AST, second: ast.AST) -> str:
        """The text after ``first`` up to the end of ``second``."""
        start = self.offset(first.end_lineno, first.end_col_offset)
        return self.source[start : self.offset(second.end_lineno, second.end_col_offset)]

    def call_text(self, call: ast.Call, new: ast.Call) -> str:
        """A call with new arguments: the text of what is called (a chain, with its comments)
        and the new arguments."""
        arguments = ast.unparse(ast.Call(ast.Name("f"), new.args, new.keywords))[1:]
        return self.text_of(call.func) + arguments

    def offset(self, line: int, column: int) -> int:
        """ast's (line, UTF-8 byte column) -> an index into the source text."""
        text = self.lines[line - 1].encode("utf-8")[:column].decode("utf-8")
        return self.line_starts[line - 1] + len(text)

    def apply(self, site: Site) -> str:
        """The module with the site's change: spliced into the text when that parses to the
        mutated tree (comments and layout kept), else the mutated tree unparsed."""
        tree = copy.deepcopy(self.tree)
        target = list(ast.walk(tree))[self.index[id(site.node)]]
        new = site.new if site.new is not None else ast.Pass()
        replace_child(tree, target, new)
        wanted = ast.dump(tree)
        start = self.offset(site.node.lineno, site.node.col_offset)
        end = self.offset(site.node.end_lineno, site.node.end_col_offset)
        text = "pass" if site.new is None else site.text or ast.unparse(new)
        if needs_parentheses(self.parent(site.node), site.node, new):
            text = f"({text})"
        spliced = self.source[:start] + text + self.source[end:]
        try:
            if ast.dump(ast.parse(spliced)) == wanted:
                return spliced
        except SyntaxError:
            pass
        return ast.unparse(tree) + "\n"


def text_order(node: ast.AST) -> tuple:
    return (node.end_lineno, node.end_col_offset, node.lineno, node.col_offset)


def is_string(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def is_number(node) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
    )


def bound_names(statement: ast.AST) -> list[str]:
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [statement.name]
    if isinstance(statement, ast.Assign):
        return [
            name.id
            for target in statement.targets
            for name in ast.walk(target)
            if isinstance(name, ast.Name)
        ]
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return [statement.target.id]
    return []


def single_assignments(body: list, *, constants_only: bool, deep: bool = False) -> dict:
    """{name: value} of the names assigned exactly once, by ``name = value``."""
    statements = [node for statement in body for node in ast.walk(statement)] if deep else body
    values: dict = {}
    counts: Counter = Counter()
    for statement in statements:
        if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        counts[name.id] += 1
            if (
                len(targets) == 1
                and isinstance(targets[0], ast.Name)
                and statement.value is not None
                and not isinstance(statement, ast.AugAssign)
            ):
                values[targets[0].id] = statement.value
    return {
        name: value
        for name, value in values.items()
        if counts[name] == 1 and (not constants_only or isinstance(value, ast.Constant))
    }


def replace_child(tree: ast.AST, target: ast.AST, new: ast.AST) -> None:
    for node in ast.walk(tree):
        for field, value in ast.iter_fields(node):
            if value is target:
                setattr(node, field, new)
                return
            if isinstance(value, list):
                for number, item in enumerate(value):
                    if item is target:
                        value[number] = new
                        return
    raise LookupError("node not in tree")


ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.List, ast.Tuple, ast.Dict, ast.Set)


# Where any expression may stand without parentheses.
OPEN_PLACES = (ast.Tuple, ast.List, ast.Set, ast.keyword, ast.Assign, ast.Return, ast.Expr)


def needs_parentheses(parent: ast.AST, old: ast.AST, new: ast.AST) -> bool:
    """A spliced expression keeps its meaning in the old one's place: an atom anywhere, a
    Compare for a Compare, anything in an open place (an argument, an element, a value
    assigned); anything else goes in parentheses."""
    if isinstance(new, ast.stmt) or isinstance(new, ATOMS) or isinstance(parent, OPEN_PLACES):
        return False
    if isinstance(parent, ast.Call) and old is not parent.func:
        return False
    if isinstance(new, ast.Constant):  # a negative number is a UnaryOp
        return False
    return not (isinstance(new, ast.Compare) and isinstance(old, ast.Compare))


def call_name(call: ast.Call) -> str:
    """The name a call is made by: F.expr(...) -> 'expr', filter(...) -> 'filter'."""
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    if isinstance(call.func, ast.Name):
        return call.func.id
    return ""


def show_call(call: ast.Call) -> str:
    """A call as a mutant's name shows it: a step of a chain without what comes before it
    (``.where(...)``), a method of a name with it (``df.where(...)``)."""
    if isinstance(call.func, ast.Attribute) and not isinstance(call.func.value, ast.Name):
        shown = copy.copy(call)
        shown.func = ast.Name(call.func.attr)
        return "." + ast.unparse(shown)
    return ast.unparse(call)


def keyword(call: ast.Call, name: str):
    return next((item.value for item in call.keywords if item.arg == name), None)


def replaced(node: ast.AST, **fields) -> ast.AST:
    """A copy of ``node`` with some fields replaced (the original tree is never changed)."""
    new = copy.deepcopy(node)
    for field, value in fields.items():
        setattr(new, field, value)
    return new


# --- SQL strings: the conditions Spark and Delta take as text -------------------------------------

SQL_ARGUMENT_CALLS = {"expr", "filter", "where"}  # their first argument
MERGE_ACTIONS = {
    "whenMatchedUpdate",
    "whenMatchedUpdateAll",
    "whenMatchedDelete",
    "whenNotMatchedInsert",
    "whenNotMatchedInsertAll",
    "whenNotMatchedBySourceUpdate",
    "whenNotMatchedBySourceDelete",
}


def merge_conditions(call: ast.Call) -> list:
    """The MERGE condition arguments of a call: merge(source, condition) or a when...(condition)."""
    name = call_name(call)
    if name == "merge":
        found = [keyword(call, "condition")] + call.args[1:2]
    elif name in MERGE_ACTIONS:
        found = [keyword(call, "condition")] + call.args[:1]
    else:
        found = []
    return [node for node in found if node is not None]


def sql_arguments(module: Module, *, merge_only: bool) -> list[ast.Constant]:
    """The string constants used as SQL conditions, each once (a module constant passed by name
    is found at its assignment), in the order of the text."""
    found = {}
    for call in module.walk(ast.Call):
        arguments = merge_conditions(call)
        if not merge_only:
            if call_name(call) in SQL_ARGUMENT_CALLS:
                arguments += call.args[:1]
            if call_name(call) == "selectExpr":
                arguments += call.args
        for argument in arguments:
            value = module.resolve(argument, constants_only=True)
            if is_string(value) and id(value) not in module.skipped:
                found[id(value)] = value
    return sorted(found.values(), key=text_order)


def string_site(node: ast.Constant, text: str) -> Site:
    new = ast.Constant(text)
    return Site(node, new, ast.unparse(node), ast.unparse(new))


# --- The operators: each yields its sites, one mutant per site -----------------------------------

FLIPPED = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq}
FLIPPED[ast.NotEq] = ast.Eq
SQL_OPERATOR = re.compile(r"<=|>=|<>|!=|==|=|<|>")
SQL_FLIPPED = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "=": "!=", "==": "!=", "!=": "="}
SQL_FLIPPED["<>"] = "="


def compare(module: Module) -> Iterator[Site]:
    """``<`` <-> ``<=``, ``>`` <-> ``>=``, ``==`` <-> ``!=``: in Python comparisons (Column ones
    included) and in SQL conditions given as text."""
    for node in module.walk(ast.Compare):
        for number, operator in enumerate(node.ops):
            if type(operator) in FLIPPED:
                ops = list(node.ops)
                ops[number] = FLIPPED[type(operator)]()
                new = replaced(node, ops=ops)
                yield Site(node, new, ast.unparse(node), ast.unparse(new))
    for node in sql_arguments(module, merge_only=False):
        for match in SQL_OPERATOR.finditer(node.value):
            text = node.value[: match.start()] + SQL_FLIPPED[match.group()]
            yield string_site(node, text + node.value[match.end() :])


DURATION = re.compile(
    r"(?<![\w.])(\d+)(\s+)(millisecond|second|minute|hour|day|week)s?\b", re.IGNORECASE
)


def number(module: Module) -> Iterator[Site]:
    """Number literals one more and one less; durations ("5 seconds") one unit more and one
    less (never 0). Not an index (``row[0]``) nor a ``range`` bound."""
    for node in module.walk(ast.Constant):
        parent = module.parent(node)
        if is_number(node):
            if isinstance(parent, (ast.Subscript, ast.Slice)) or (
                isinstance(parent, ast.Call) and call_name(parent) == "range"
            ):
                continue
            for value in (node.value + 1, node.value - 1):
                new = number_node(value)
                yield Site(node, new, *in_context(module, node, new))
        elif is_string(node) and not isinstance(parent, (ast.JoinedStr, ast.FormattedValue)):
            for match in DURATION.finditer(node.value):
                count = int(match.group(1))
                for value in (count + 1, count - 1):
                    if value > 0:
                        text = node.value[: match.start(1)] + str(value)
                        yield string_site(node, text + node.value[match.end(1) :])


def number_node(value: int | float) -> ast.expr:
    """A number as Python parses it: -1 is minus applied to 1."""
    if value < 0:
        return ast.UnaryOp(ast.USub(), ast.Constant(-value))
    return ast.Constant(value)


CONTEXT_LIMIT = 80  # characters of the expression around a number that its name shows


def in_context(module: Module, node: ast.expr, new: ast.expr) -> tuple[str, str]:
    """A small change as the mutant's name shows it: within the expression around it (a call,
    a tuple, a product) when that is short, so that two 2s of one function differ."""
    holder = module.parent(node)
    while isinstance(holder, (ast.keyword, ast.UnaryOp)):
        holder = module.parent(holder)
    if not isinstance(holder, ast.expr) or len(ast.unparse(holder)) > CONTEXT_LIMIT:
        return ast.unparse(node), ast.unparse(new)
    changed = copy.deepcopy(holder)
    replace_child(changed, list(ast.walk(changed))[list(ast.walk(holder)).index(node)], new)
    if isinstance(holder, ast.Call):
        return show_call(holder), show_call(changed)
    return ast.unparse(holder), ast.unparse(changed)


def swap(module: Module) -> Iterator[Site]:
    """Two positional arguments of one call with different constant values of one kind (two
    numbers, or two durations such as a window's size and slide) swapped."""
    for call in module.walk(ast.Call):
        values = [module.resolve(argument, constants_only=True) for argument in call.args]
        for first in range(len(call.args)):
            for second in range(first + 1, len(call.args)):
                a, b = values[first], values[second]
                if not (kind_of(a) and kind_of(a) == kind_of(b) and a.value != b.value):
                    continue
                args = list(call.args)
                args[first], args[second] = args[second], args[first]
                new = replaced(call, args=copy.deepcopy(args))
                yield Site(call, new, show_call(call), show_call(new), module.call_text(call, new))


def kind_of(node) -> str:
    if is_number(node):
        return type(node.value).__name__
    if is_string(node) and DURATION.fullmatch(node.value.strip()):
        return "duration"
    return ""


KEY_CALLS = {"groupBy", "groupby", "partitionBy", "dropDuplicates", "dropDuplicatesWithinWatermark"}


def drop_key(module: Module) -> Iterator[Site]:
    """One key left out: of groupBy/partitionBy/dropDuplicates..., of a join's ``on`` list;
    one side of an ``a & b`` in a join condition or a filter."""
    conditions = []
    for call in module.walk(ast.Call):
        name = call_name(call)
        if name in KEY_CALLS:
            if len(call.args) >= 2 and not any(isinstance(a, ast.Starred) for a in call.args):
                for number in range(len(call.args)):
                    args = call.args[:number] + call.args[number + 1 :]
                    new = replaced(call, args=copy.deepcopy(args))
                    text = module.call_text(call, new)
                    yield Site(call, new, show_call(call), show_call(new), text)
            elif len(call.args) == 1:
                yield from list_items_left_out(module, call.args[0])
        elif name == "join":
            on = call.args[1] if len(call.args) >= 2 else keyword(call, "on")
            if on is not None:
                yield from list_items_left_out(module, on)
                conditions.append(on)
        elif name in ("filter", "where") and call.args and isinstance(call.func, ast.Attribute):
            conditions.append(call.args[0])
    seen = set()
    for condition in conditions:
        for node in conjunctions(module, condition, set()):
            if id(node) not in seen:
                seen.add(id(node))
                for kept in (node.left, node.right):
                    new = copy.deepcopy(kept)
                    text = module.text_of(kept)
                    yield Site(node, new, ast.unparse(node), ast.unparse(kept), text)


def list_items_left_out(module: Module, node) -> Iterator[Site]:
    if isinstance(node, (ast.List, ast.Tuple)) and len(node.elts) >= 2:
        for number in range(len(node.elts)):
            new = replaced(node, elts=copy.deepcopy(node.elts[:number] + node.elts[number + 1 :]))
            yield Site(node, new, *in_context(module, node, new))


def conjunctions(module: Module, node, visited: set) -> Iterator[ast.BinOp]:
    """The ``a & b`` nodes of a condition, through the names it is built from."""
    if id(node) in visited:
        return
    visited.add(id(node))
    if isinstance(node, ast.Name):
        value = module.resolve(node, constants_only=False)
        if value is not node:
            yield from conjunctions(module, value, visited)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd):
        yield node
        yield from conjunctions(module, node.left, visited)
        yield from conjunctions(module, node.right, visited)


DROPPED_CALLS = {
    "withWatermark",
    "dropDuplicates",
    "dropDuplicatesWithinWatermark",
    "option",
    "options",
    "partitionBy",
    "filter",
    "where",
    "outputMode",
    "trigger",
}


def drop_call(module: Module) -> Iterator[Site]:
    """A step left out of a chain (x.withWatermark(...) -> x); a statement that forgets state or
    a timer (state.remove(), handle.deleteTimer(t), x.clear()) deleted."""
    for node in module.walk((ast.Call, ast.Expr)):
        if isinstance(node, ast.Call):
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr in DROPPED_CALLS
                and not (
                    isinstance(func.value, ast.Name) and func.value.id in module.imported_modules
                )
            ):
                receiver = copy.deepcopy(func.value)
                text = module.text_of(func.value)
                yield Site(node, receiver, show_call(node), "(removed)", text)
        elif isinstance(node.value, ast.Call) and forgets(node.value):
            yield Site(node, None, ast.unparse(node), "(removed)")


def forgets(call: ast.Call) -> bool:
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in ("deleteTimer", "clear"):
        return True
    receiver = ast.unparse(func.value).split(".")[-1]
    return func.attr == "remove" and "state" in receiver.lower()


FILTERS = {"filter", "where"}


def move_filter(module: Module) -> Iterator[Site]:
    """An adjacent withWatermark(...) and filter/where(...) of a chain swapped: the watermark
    then sees other rows."""
    for outer in module.walk(ast.Call):
        inner = outer.func.value if isinstance(outer.func, ast.Attribute) else None
        if not (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute)):
            continue
        pair = {inner.func.attr, outer.func.attr}
        if "withWatermark" not in pair or not pair & FILTERS:
            continue
        first = replaced(inner, func=replaced(outer.func, value=copy.deepcopy(inner.func.value)))
        first.args, first.keywords = copy.deepcopy(outer.args), copy.deepcopy(outer.keywords)
        new = replaced(outer, func=replaced(inner.func, value=first))
        new.args, new.keywords = copy.deepcopy(inner.args), copy.deepcopy(inner.keywords)
        inner_step, outer_step = ast.unparse(step(inner)), ast.unparse(step(outer))
        # The two steps' own text (with their comments), the other way round.
        text = (
            module.text_of(inner.func.value)
            + module.text_between(inner, outer)
            + module.text_between(inner.func.value, inner)
        )
        yield Site(outer, new, f".{inner_step}.{outer_step}", f".{outer_step}.{inner_step}", text)


def step(call: ast.Call) -> ast.Call:
    """One step of a chain, as a call of its method name alone."""
    return replaced(call, func=ast.Name(call.func.attr))


SQL_AND = re.compile(r"\s+AND\s+", re.IGNORECASE)


def loosen_merge(module: Module) -> Iterator[Site]:
    """A MERGE condition with one AND-ed condition left out (at any depth of parentheses); a
    when...(condition=...) action without its condition."""
    for node in sql_arguments(module, merge_only=True):
        for text in conjuncts_left_out(node.value):
            yield string_site(node, text)
    for call in module.walk(ast.Call):
        if call_name(call) in MERGE_ACTIONS and keyword(call, "condition") is not None:
            keywords = [item for item in call.keywords if item.arg != "condition"]
            new = replaced(call, keywords=copy.deepcopy(keywords))
            yield Site(call, new, show_call(call), show_call(new), module.call_text(call, new))


def conjuncts_left_out(text: str) -> Iterator[str]:
    """``text`` with one AND-ed part left out, for each AND of each parenthesised group."""
    depth = 0
    groups: dict[int, list] = {}  # a group's opening index -> [its AND matches]
    openings = [-1]
    for index, char in enumerate(text):
        if char == "(":
            depth += 1
            openings.append(index)
        elif char == ")":
            depth -= 1
            openings.pop()
        elif char.isspace():
            match = SQL_AND.match(text, index)
            if match and (index == 0 or not text[index - 1].isspace()):
                groups.setdefault(openings[-1], []).append(match)
    for opening, matches in groups.items():
        start = opening + 1
        close = closing(text, opening)
        bounds = [start, *(edge for match in matches for edge in match.span()), close]
        parts = [(bounds[n], bounds[n + 1]) for n in range(0, len(bounds), 2)]
        for number, (begin, end) in enumerate(parts):
            if number < len(parts) - 1:
                cut_from, cut_to = begin, parts[number + 1][0]  # the part and the AND after it
            else:
                cut_from, cut_to = parts[number - 1][1], end  # the AND before it and the part
            yield text[:cut_from] + text[cut_to:]


def closing(text: str, opening: int) -> int:
    if opening < 0:
        return len(text)
    depth = 0
    for index in range(opening, len(text)):
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        if depth == 0:
            return index
    return len(text)


def flip_bool(module: Module) -> Iterator[Site]:
    """True <-> False where a call gets it as a keyword argument."""
    for node in module.walk(ast.keyword):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, bool):
            new = ast.Constant(not node.value.value)
            yield Site(node.value, new, ast.unparse(node), f"{node.arg}={new.value}")


OPERATORS: dict[str, Callable[[Module], Iterator[Site]]] = {
    "compare": compare,
    "number": number,
    "swap": swap,
    "drop-key": drop_key,
    "drop-call": drop_call,
    "move-filter": move_filter,
    "loosen-merge": loosen_merge,
    "bool": flip_bool,
}


def mutants(source: str, only: set[str] | None = None) -> list[Mutant]:
    """Every mutant of a module, operator by operator, each in the order of the text; a change
    that gives a module some other mutant already is (the same tree) is left out.

    ``only``: mutate only the module-level statements that bind these names (a predict
    exercise's PREDICTION: its check runs the pristine query, whatever the solution's says).
    """
    module = Module(source)
    seen = {ast.dump(module.tree)}
    names: Counter = Counter()
    found = []
    for operator, sites in OPERATORS.items():
        for site in sites(module):
            if only is not None and not set(module.top_names(site.node)) & only:
                continue
            text = module.apply(site)
            shape = ast.dump(ast.parse(text))
            if shape in seen:
                continue
            seen.add(shape)
            name = f"{operator} in {module.scope(site.node)}: {site.before} -> {site.after}"
            names[name] += 1
            if names[name] > 1:
                name = f"{name}#{names[name]}"
            found.append(Mutant(name, operator, site.node.lineno, text))
    return found


# --- The exercises' mutants ---------------------------------------------------------------------


def exercise_mutants(exercise) -> list[Mutant]:
    """The mutants of an exercise's reference solution (a predict exercise: of its prediction)."""
    from practice import catalog

    only = {exercise.prediction} if exercise.kind == "predict" else None
    return mutants(catalog.solution(exercise).read_text(encoding="utf-8"), only)


def sample(exercise_id: str, found: list[Mutant], size: int = SAMPLE_SIZE) -> list[Mutant]:
    """A fixed few of an exercise's mutants, chosen by a hash of their names (the same every run,
    on every machine)."""

    def rank(mutant: Mutant) -> str:
        return hashlib.sha256(f"{exercise_id}|{mutant.name}".encode()).hexdigest()

    return sorted(found, key=rank)[:size]


def equivalent_mutants() -> dict[str, dict[str, str]]:
    """{exercise id: {mutant name: why it is equivalent}} from exercises/equivalent_mutants.json."""
    if not EQUIVALENT_FILE.exists():
        return {}
    return json.loads(EQUIVALENT_FILE.read_text(encoding="utf-8"))


def write_mutant(exercise, mutant: Mutant, folder: Path) -> Path:
    """The mutant as a file named like the solution, in ``folder``."""
    from practice import catalog

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / catalog.solution(exercise).name
    path.write_text(mutant.source, encoding="utf-8")
    return path


def chosen_exercises(ids: list[str]) -> list:
    from practice import catalog

    everything = catalog.all_exercises()
    if ids:
        return [catalog.find(everything, wanted) for wanted in ids]
    return everything


def diff(exercise, mutant: Mutant) -> str:
    from practice import catalog

    solution = catalog.solution(exercise)
    lines = difflib.unified_diff(
        solution.read_text(encoding="utf-8").splitlines(keepends=True),
        mutant.source.splitlines(keepends=True),
        str(solution.relative_to(ROOT)),
        mutant.name,
        n=1,
    )
    return "".join(lines)


def list_mutants(ids: list[str], names: bool, diffs: bool) -> int:
    total = 0
    for exercise in chosen_exercises(ids):
        found = exercise_mutants(exercise)
        total += len(found)
        by_operator = Counter(mutant.operator for mutant in found)
        detail = ", ".join(f"{operator} {count}" for operator, count in by_operator.items())
        print(f"{exercise.id:6} {exercise.kind:8} {len(found):3} mutants  ({detail})")
        for mutant in found if names or diffs else []:
            print(
                diff(exercise, mutant) if diffs else f"         line {mutant.line}: {mutant.name}"
            )
    print(f"{total} mutants in all")
    return 0


def report(ids: list[str], only_sample: bool, verbose: bool = False) -> int:
    """Run every mutant's check in one Spark session and print the kill rates (``verbose``:
    each mutant's verdict as it comes)."""
    import tempfile

    from practice.checking import PASSED, check
    from practice.session import exercise_session

    exercises = chosen_exercises(ids)
    if not ids:  # a survive check kills and restarts child processes: only when named
        exercises = [exercise for exercise in exercises if exercise.kind != "survive"]
    equivalent = equivalent_mutants()
    # pyspark logs each refused query's full Java stack trace at ERROR (its query-context
    # loggers); the verdict says it in a line.
    for logger in ("DataFrameQueryContextLogger", "SQLQueryContextLogger"):
        logging.getLogger(logger).disabled = True
    print("Starting Spark...", flush=True)
    spark = exercise_session()
    rows, problems = [], []
    try:
        for exercise in exercises:
            found = exercise_mutants(exercise)
            if only_sample:
                found = sample(exercise.id, found)
            listed = equivalent.get(exercise.id, {})
            killed, equal, survivors = 0, 0, []
            started = time.monotonic()
            with tempfile.TemporaryDirectory(prefix="mutants-") as folder:
                for number, mutant in enumerate(found):
                    path = write_mutant(exercise, mutant, Path(folder) / f"mutant-{number}")
                    work = Path(folder) / f"work-{number}"
                    verdict = check(spark, exercise, path, work, pristine_ok=True)
                    if verbose:
                        print(f"  {verdict.status:11} {mutant.name}", flush=True)
                        for line in verdict.report.splitlines()[:6]:
                            print(f"              {line}")
                    if verdict.status != PASSED:
                        killed += 1
                        if mutant.name in listed:
                            problems.append(f"{exercise.id} {mutant.name}: listed, but killed")
                    elif mutant.name in listed:
                        equal += 1
                    else:
                        survivors.append(mutant.name)
            seconds = time.monotonic() - started
            rows.append((exercise.id, len(found), killed, equal, survivors, seconds))
            print(
                f"{exercise.id}: {len(found)} mutants, {killed} killed, {equal} equivalent, "
                f"{len(survivors)} survived ({seconds:.0f} s)",
                flush=True,
            )
    finally:
        spark.stop()
    print()
    print("| exercise | mutants | killed | equivalent | survived | kill rate | s/mutant |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for exercise_id, count, killed, equal, survivors, seconds in rows:
        rate = f"{killed / (count - equal):.0%}" if count > equal else "-"
        per = f"{seconds / count:.1f}" if count else "-"
        print(
            f"| {exercise_id} | {count} | {killed} | {equal} | {len(survivors)} | {rate} | {per} |"
        )
    for exercise_id, *_, survivors, _seconds in rows:
        for name in survivors:
            print(f"survived {exercise_id}: {name}")
    for problem in problems:
        print(f"NOT EQUIVALENT {problem}")
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.mutants", description="Mutants of the exercises' solutions."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="list each exercise's mutants (no Spark)")
    listing.add_argument("ids", nargs="*", help="exercise ids, e.g. 07.1 (default: all)")
    listing.add_argument("--names", action="store_true", help="print every mutant's name")
    listing.add_argument("--diff", action="store_true", help="print every mutant as a diff")
    running = commands.add_parser("report", help="run the checks on the mutants: kill rates")
    running.add_argument("ids", nargs="*", help="exercise ids (default: all but survive ones)")
    running.add_argument("--sample", action="store_true", help="only the mutants_sample lane's")
    running.add_argument("-v", "--verbose", action="store_true", help="print every verdict")
    args = parser.parse_args(argv)
    if args.command == "list":
        return list_mutants(args.ids, args.names, args.diff)
    return report(args.ids, args.sample, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
