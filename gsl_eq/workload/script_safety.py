"""TVMScript that reading runs no code: what :meth:`Workload.load <gsl_eq.workload.Workload.load>` lets
TVM's parser read.

TVM's TVMScript parser evaluates the Python expressions of a text with ``eval`` (annotations, shapes,
call arguments, decorators, ``R.func_attr`` dictionaries), so a file whose annotation reads
``R.Tensor((2, __import__("os").system("...")), "float32")`` runs a command when parsed. A saved
workload is data, so it is checked first, with Python's :mod:`ast` (nothing evaluated), against what
TVM's printer (``mod.script()``) writes:

* the ``@I.ir_module`` class, ``@R.function`` and ``@T.prim_func`` defs (decorator keywords such as
  ``private=True``), ``with``, ``for``, ``while``, ``if``, ``assert``, assignments and ``return``,
  ``from tvm.script import ... as I/R/T`` imports and ``n = TypeVar("n")`` (a symbolic size);
* calls of attribute chains rooted at ``R``, ``T``, ``I`` (or ``Axis``), resolved here on TVM's own
  namespace objects: each step must stay in TVMScript's namespaces (``R.nn``, ``T.axis``, ...) and end
  on one of TVMScript's functions, ops or IR classes, so ``R.builtin.builtin.tvm.get_global_func`` or
  ``R.entry.parse`` is refused; a namespace or class is only a prefix or a callee, never a value;
* names the script binds (parameters, assignments, loop variables, local functions; a builtin's name
  only where the script has bound it), ``cls``, ``metadata["..."][k]``, and the attributes of such
  names; constants, tuples, lists, dicts, subscripts, slices and operators.

Everything else is refused with a :class:`~gsl_eq.errors.WorkloadError` saying what was found and where:
any name or attribute starting with ``_`` (``().__class__.__base__.__subclasses__()``), Python's
builtins but ``range`` (``__import__``, ``eval``, ``open``, ``getattr``, ...), the ``tvm`` module, lambdas,
comprehensions, f-strings, ``:=``, ``*``/``**`` arguments, other imports, ``global``, ``try``, ``raise``,
``yield``, ``await``, ``del``, classes but the module and other decorators.

:func:`parsed` then reads an accepted text with TVM's parser given no Python builtins (``range``
only): a second guard, should the check above miss an expression.

    check(text, "model.opt.py")   # raises WorkloadError: ... a call of __import__ at line 7, column 38 ...
    mod = parsed(text)            # tvm.script.from_source, with no builtins to call
"""

from __future__ import annotations

import ast
import builtins
import functools
import types
from dataclasses import dataclass
from typing import Any

from ..errors import WorkloadError

#: The namespaces a script's attribute chains may start from (the printer's ``# from tvm.script import
#: ir as I`` header), by name: resolved lazily, on TVM's parser's own objects.
ROOTS = ("I", "R", "T", "Axis")

#: Modules a chain may walk through: TVMScript's dialect namespaces and Relax's op namespaces (``R.nn``).
NAMESPACE_MODULES = ("tvm.script.parser.ir", "tvm.relax.script.parser", "tvm.tirx.script.parser",
                     "tvm.relax.script.parser.dist", "tvm.relax.op.")

#: Modules that define what a chain may end on: TVMScript's builders and parsers' entry points, Relax's and
#: TIR's ops and IR classes. Not TVM's runtime, FFI, parser internals, targets or external kernels.
DEFINING_MODULES = ("tvm.relax.op.", "tvm.relax.expr", "tvm.relax.script.parser.entry", "tvm.relax.script.parser.dist",
                    "tvm.relax.script.builder.ir", "tvm.relax.distributed.global_info", "tvm.tirx.op",
                    "tvm.tirx.expr", "tvm.tirx.layout", "tvm.tirx.exec_scope", "tvm.tirx.script.builder.ir",
                    "tvm.tirx.script.parser.entry", "tvm.ir.prim.", "tvm.ir.expr", "tvm.ir.type",
                    "tvm.script.ir_builder.ir.ir", "tvm.script.parser.ir.entry")

#: Names in those modules that take Python functions or source to run, compile or parse, or that change
#: TVM's state (``register*``): never printed.
REFUSED_NAMES = frozenset({"pyfunc", "macro", "inline", "jit", "rewriter", "emit_te", "call_kernel", "parse",
                           "from_source", "get_global_func", "load_json"})

#: The decorators the printer writes, as chains: the module class's and the functions'.
CLASS_DECORATORS = (("I", "ir_module"),)
FUNCTION_DECORATORS = {("R", "function"): "relax", ("T", "prim_func"): "tir"}

#: The imports the printer writes (commented out, but a reader may restore them): module -> names.
IMPORTS = {"tvm.script": {("ir", "I"), ("relax", "R"), ("tir", "T"), ("tirx", "T")},
           "tvm.tirx.layout": {("Axis", None)}, "typing": {("TypeVar", None)}, "__future__": {("annotations", None)}}

#: Names a script may not bind: the ones TVM's parser evaluates its expressions with (and ``__tvm*``, its
#: temporaries).
RESERVED_NAMES = frozenset({"__builtins__", "__current_script_parser__"})

#: The one Python builtin the printer writes (``for i in range(n):`` in TIR).
BUILTINS_KEPT = frozenset({"range"})
#: Names TVM's parser would resolve that reach beyond TVMScript (``tvm.runtime``...) or alias its namespaces.
REFUSED_GLOBALS = frozenset({"tvm", "ir", "tir", "relax", "tirx", "Tx"})

@dataclass(frozen=True)
class Finding:
    """Code a script carries: what, at which line and column (both from 1)."""

    what: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.what} at line {self.line}, column {self.column}"


class _Refused(Exception):
    def __init__(self, node: ast.AST, what: str):
        super().__init__(what)
        self.finding = Finding(what, getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1)


def code_in(text: str) -> Finding | None:
    """The first expression or statement of ``text`` that TVM's parser could run as code, or None. A text
    Python cannot parse is None too: TVM's parser parses it the same way, so it runs nothing either."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):  # ValueError: a NUL byte
        return None
    try:
        _Checker().module(tree)
    except _Refused as refused:
        return refused.finding
    return None


def check(text: str, source: str) -> None:
    """Raise :class:`~gsl_eq.errors.WorkloadError` if ``text`` carries code that TVM's parser would run;
    ``source`` (a path) begins the message."""
    finding = code_in(text)
    if finding is not None:
        raise WorkloadError(refusal(source, finding))


def refusal(source: str, finding: Finding) -> str:
    """What :func:`check` says of ``finding`` in ``source``."""
    return (f"{source} is not TVMScript as TVM's printer writes it: it carries code that loading it would run, "
            f"{finding}. Nothing in it was run")


def parsed(text: str) -> Any:
    """``text`` as TVM's parser reads it (``tvm.script.from_source``), its expressions evaluated with no
    Python builtins but ``range`` and without the ``tvm`` module: check it first (:func:`check`)."""
    import tvm

    return tvm.script.from_source(text, extra_vars=parser_globals())


def parser_globals() -> dict[str, Any]:
    """The names TVM's parser evaluates a loaded script's expressions with: TVMScript's namespaces, no
    Python builtins but ``range``. Every builtin's name is bound to a stand-in, so that neither ``eval``'s
    globals nor the parser's own look-up of a bare name (``_get_builtin_or_none``, which reads TVM's module's
    builtins) finds the real one; a name the script binds still shadows it."""
    names: dict[str, Any] = {name: _NoBuiltin(name) for name in dir(builtins)
                             if not name.startswith("__") and name not in BUILTINS_KEPT}
    return {**names, **_namespaces(), "__builtins__": {name: getattr(builtins, name) for name in BUILTINS_KEPT}}


class _NoBuiltin:
    """What a Python builtin's name means in a loaded script: nothing to call."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"<no Python builtin {self.name} in a loaded TVMScript>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise NameError(f"name {self.name!r} is not defined: a loaded TVMScript has no Python builtins")


@functools.lru_cache(maxsize=1)
def _namespaces() -> dict[str, Any]:
    """TVM's parser's objects for the printer's names (as ``tvm.script``'s parser binds them)."""
    from typing import TypeVar

    from tvm.script import parser
    from tvm.tirx.layout import Axis

    return {"I": parser.ir, "R": parser.relax, "T": parser.tirx, "Axis": Axis, "TypeVar": TypeVar}


def _defining_module(value: Any) -> str:
    if isinstance(value, types.ModuleType):
        return value.__name__
    owner = value if isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType)) else type(value)
    return str(getattr(owner, "__module__", None) or "")


def _in(module: str, allowed: tuple[str, ...]) -> bool:
    return any(module.startswith(a) if a.endswith(".") else module == a for a in allowed)


def _walkable(value: Any) -> bool:
    """Whether a chain may go on past ``value``: one of TVMScript's namespaces, or a class it defines (``T.axis``)."""
    if isinstance(value, types.ModuleType):
        return _in(value.__name__, NAMESPACE_MODULES)
    return isinstance(value, type) and _in(_defining_module(value), DEFINING_MODULES)


class _Checker:
    """Walks a module's AST in order, with the names the script has bound so far in each scope (TVM's
    parser's frames: a function, and each block's body), refusing what :mod:`gsl_eq.workload.script_safety` refuses."""

    def __init__(self) -> None:
        self.scopes: list[set[str]] = [set()]
        self.dialects: list[str] = []  # "relax" / "tir" for each function being walked

    # --- scopes

    def bound(self, name: str) -> bool:
        return any(name in scope for scope in self.scopes)

    def bind(self, target: ast.expr) -> None:
        if isinstance(target, ast.Name):
            self.bind_name(target, target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self.bind(element)
        elif isinstance(target, ast.Subscript):  # a TIR buffer store, A[i] = ...
            self.expr(target.value)
            self.expr(target.slice)
        elif isinstance(target, ast.Attribute):
            raise _Refused(target, f"an assignment to an attribute ({_dotted(target) or target.attr})")
        else:
            raise _Refused(target, f"an assignment to {_kind(target)}")

    def bind_name(self, node: ast.AST, name: str) -> None:
        if name in RESERVED_NAMES or name.startswith("__tvm"):
            raise _Refused(node, f"an assignment to {name} (a name TVM's parser evaluates with)")
        self.scopes[-1].add(name)

    def block(self, body: list[ast.stmt]) -> None:
        """Walk ``body`` in a scope of its own (TVM's parser's frame: what it binds is gone after it)."""
        self.scopes.append(set())
        try:
            for stmt in body:
                self.stmt(stmt)
        finally:
            self.scopes.pop()

    # --- statements

    def module(self, tree: ast.Module) -> None:
        for stmt in tree.body:
            if isinstance(stmt, ast.ImportFrom):
                self.import_from(stmt)
            elif isinstance(stmt, ast.ClassDef):
                self.class_def(stmt)
            else:
                self.stmt(stmt)

    def import_from(self, node: ast.ImportFrom) -> None:
        allowed = IMPORTS.get(node.module or "", set()) if not node.level else set()
        for alias in node.names:
            if (alias.name, alias.asname) not in allowed:
                raise _Refused(node, f"an import (from {'.' * node.level}{node.module or ''} import {alias.name})")

    def class_def(self, node: ast.ClassDef) -> None:
        if node.bases or node.keywords:
            raise _Refused(node, f"a base class of {node.name}")
        self.decorators(node, CLASS_DECORATORS)
        self.scopes.append(set())  # the class's frame, its name bound in it (Module.f is cls.f)
        try:
            self.bind_name(node, node.name)
            for stmt in node.body:
                if isinstance(stmt, ast.FunctionDef):
                    self.function_def(stmt)
                elif isinstance(stmt, ast.Assign):  # I.decl_function(name, value): the name is not bound
                    for target in stmt.targets:
                        if not isinstance(target, ast.Name) or target.id.startswith("_"):
                            raise _Refused(target, f"an assignment to {_kind(target)} in the module class")
                    self.expr(stmt.value)
                elif isinstance(stmt, (ast.Expr, ast.Pass)):
                    self.stmt(stmt)
                else:
                    raise _Refused(stmt, f"{_kind(stmt)} in the module class")
        finally:
            self.scopes.pop()

    def decorators(self, node: ast.ClassDef | ast.FunctionDef, allowed: Any) -> Any:
        """Check ``node``'s decorator (exactly one, of ``allowed`` chains); the chain it is."""
        for decorator in node.decorator_list:
            self.expr(decorator)
        chains = [_dotted_parts(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list]
        if len(chains) != 1 or chains[0] not in allowed:
            where = node.decorator_list[0] if node.decorator_list else node
            names = " or ".join("@" + ".".join(c) for c in allowed)
            found = ", ".join("@" + ast.unparse(d) for d in node.decorator_list) or "no decorator"
            raise _Refused(where, f"{found} on {node.name} (TVMScript's are {names})")
        return chains[0]

    def function_def(self, node: ast.FunctionDef) -> None:
        """A function: a module's (reached as cls.<name>, its name not bound) or a Relax function's local one
        (its name bound after it, as Relax's parser binds it)."""
        local = bool(self.dialects) and self.dialects[-1] == "relax"
        dialect = FUNCTION_DECORATORS[self.decorators(node, FUNCTION_DECORATORS)]
        args = node.args
        if args.vararg or args.kwarg:
            raise _Refused(node, f"*args or **kwargs in {node.name}")
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        for default in [*args.defaults, *args.kw_defaults]:
            if default is not None:
                self.expr(default)
        for param in params:
            if param.annotation is not None:
                self.expr(param.annotation)
        if node.returns is not None:
            self.expr(node.returns)
        self.scopes.append(set())
        for param in params:
            self.bind_name(param, param.arg)
        self.dialects.append(dialect)
        try:
            for stmt in node.body:
                self.stmt(stmt)
        finally:
            self.scopes.pop()
            self.dialects.pop()
        if local:
            self.bind_name(node, node.name)

    def stmt(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Expr):
            self.expr(node.value)
        elif isinstance(node, ast.Assign):
            self.expr(node.value)
            for target in node.targets:
                self.bind(target)
        elif isinstance(node, ast.AnnAssign):
            self.expr(node.annotation)
            if node.value is not None:
                self.expr(node.value)
            self.bind(node.target)
        elif isinstance(node, ast.AugAssign):
            self.expr(node.value)
            if isinstance(node.target, ast.Name):
                self.name(node.target, "value")
            self.bind(node.target)
        elif isinstance(node, ast.Return):
            if node.value is not None:
                self.expr(node.value)
        elif isinstance(node, ast.FunctionDef):
            self.function_def(node)
        elif isinstance(node, ast.For):
            self.no_else(node)
            self.expr(node.iter)
            self.scopes.append(set())
            try:
                self.bind(node.target)
                for stmt in node.body:
                    self.stmt(stmt)
            finally:
                self.scopes.pop()
        elif isinstance(node, ast.While):
            self.no_else(node)
            self.expr(node.test)
            self.block(node.body)
        elif isinstance(node, ast.If):
            self.if_(node)
        elif isinstance(node, ast.With):
            self.with_(node)
        elif isinstance(node, ast.Assert):
            self.expr(node.test)
            if node.msg is not None:
                self.expr(node.msg)
        elif isinstance(node, (ast.Pass, ast.Break, ast.Continue)):
            pass
        else:  # imports, class, global, nonlocal, try, raise, del, async, match...
            raise _Refused(node, _kind(node))

    def no_else(self, node: ast.For | ast.While) -> None:
        if node.orelse:
            raise _Refused(node.orelse[0], f"an else block of {_kind(node)}")

    def if_(self, node: ast.If) -> None:
        self.expr(node.test)
        self.block(node.body)
        self.block(node.orelse)
        # Relax binds after an if the variable both branches bind last (R.If's var); TIR binds nothing
        last = [_last_binding(branch) for branch in (node.body, node.orelse)]
        if self.dialects and self.dialects[-1] == "relax" and last[0] is not None and last[0] == last[1]:
            self.scopes[-1].add(last[0])

    def with_(self, node: ast.With) -> None:
        for item in node.items:
            self.expr(item.context_expr)
        self.scopes.append(set())
        try:
            for item in node.items:
                if item.optional_vars is not None:
                    self.bind(item.optional_vars)
            for stmt in node.body:
                self.stmt(stmt)
        finally:
            self.scopes.pop()
        # R.output(a, b) in `with R.dataflow():` binds a and b after the block
        if any(_dotted_parts(i.context_expr.func if isinstance(i.context_expr, ast.Call) else i.context_expr)
               == ("R", "dataflow") for i in node.items):
            for stmt in node.body:
                if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
                        and _dotted_parts(stmt.value.func) == ("R", "output")):
                    self.scopes[-1].update(a.id for a in stmt.value.args if isinstance(a, ast.Name))

    # --- expressions

    def expr(self, node: ast.expr, role: str = "value") -> None:
        """Check ``node``; ``role``: "callee" when it is the function a call calls."""
        if isinstance(node, ast.Constant):
            return
        if isinstance(node, ast.Name):
            self.name(node, role)
        elif isinstance(node, ast.Attribute):
            self.attribute(node, role)
        elif isinstance(node, ast.Call):
            self.call(node)
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            for element in node.elts:
                if isinstance(element, ast.Starred):
                    raise _Refused(element, "a starred expression (*)")
                self.expr(element)
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if key is None:
                    raise _Refused(value, "a dict unpacking (**)")
                self.expr(key)
                self.expr(value)
        elif isinstance(node, ast.Subscript):
            self.expr(node.value)
            self.expr(node.slice)
        elif isinstance(node, ast.Slice):
            for part in (node.lower, node.upper, node.step):
                if part is not None:
                    self.expr(part)
        elif isinstance(node, ast.UnaryOp):
            self.expr(node.operand)
        elif isinstance(node, ast.BinOp):
            self.expr(node.left)
            self.expr(node.right)
        elif isinstance(node, ast.BoolOp):
            for value in node.values:
                self.expr(value)
        elif isinstance(node, ast.Compare):
            for value in (node.left, *node.comparators):
                self.expr(value)
        elif isinstance(node, ast.IfExp):
            for value in (node.test, node.body, node.orelse):
                self.expr(value)
        else:  # lambda, comprehensions, f-strings, :=, await, yield, starred...
            raise _Refused(node, _kind(node))

    def name(self, node: ast.Name, role: str) -> None:
        name = node.id
        what = f"a call of {name}" if role == "callee" else f"the name {name}"
        if self.bound(name):
            return  # the script's own value
        if name in ROOTS:
            self.chain(node, (name,), role)
        elif hasattr(builtins, name) and name not in BUILTINS_KEPT:
            raise _Refused(node, f"{what} (a Python builtin)")
        elif name.startswith("_"):
            raise _Refused(node, f"{what} (a name starting with _)")
        elif name == "TypeVar":
            raise _Refused(node, f'{what} (TypeVar is only called as TypeVar("name"))')
        elif name in REFUSED_GLOBALS:
            raise _Refused(node, f"{what} (TVM's parser binds it to a module that reaches beyond TVMScript)")
        # else: a name TVM's parser binds (cls, a symbolic size) or reports undefined

    def attribute(self, node: ast.Attribute, role: str) -> None:
        parts, base = [], node
        while isinstance(base, ast.Attribute):
            parts.append(base.attr)
            base = base.value
        parts.reverse()
        if not isinstance(base, ast.Name):
            self.expr(base)  # what it holds first: __import__("os").system is a call of __import__
        hidden = next((p for p in parts if p.startswith("_")), None)
        if hidden is not None:
            raise _Refused(node, f"the attribute {hidden} (a name starting with _)")
        if not isinstance(base, ast.Name):
            raise _Refused(node, f"an attribute ({'.'.join(parts)}) of {_kind(base)}")
        if base.id in ROOTS and not self.bound(base.id):
            self.chain(node, (base.id, *parts), role)
        else:
            self.name(base, "value")  # a name the script binds, or cls: its attributes are TVM's objects'

    def chain(self, node: ast.expr, parts: tuple[str, ...], role: str) -> None:
        """Resolve ``R.nn.conv2d`` on TVM's objects: each step in TVMScript's namespaces, the end one of
        its functions or IR classes (a namespace or a class only where it is called or a prefix)."""
        dotted = ".".join(parts)
        what = f"a call of {dotted}" if role == "callee" else dotted
        value = _namespaces()[parts[0]]
        for k, attr in enumerate(parts[1:], start=1):
            if not _walkable(value):
                raise _Refused(node, f"{what} ({'.'.join(parts[:k])} is not one of TVMScript's namespaces)")
            try:
                value = getattr(value, attr)
            except Exception:  # noqa: BLE001 - TVM's parser fails on it the same way, running nothing
                return
        if isinstance(value, types.ModuleType):
            raise _Refused(node, f"{what} (a namespace, used as a value)")
        names = {parts[-1], str(getattr(value, "__name__", ""))}
        if (names & REFUSED_NAMES or any(n.startswith("register") for n in names)
                or not _in(_defining_module(value), DEFINING_MODULES)):
            raise _Refused(node, f"{what} (not one of TVMScript's functions: it is defined in "
                                 f"{_defining_module(value) or 'no module'})")
        if isinstance(value, type) and role != "callee":
            raise _Refused(node, f"{what} (a class, used as a value)")

    def call(self, node: ast.Call) -> None:
        func = node.func
        if not isinstance(func, (ast.Name, ast.Attribute)):
            self.expr(func)
            raise _Refused(node, f"a call of {_kind(func)}")
        type_var = isinstance(func, ast.Name) and func.id == "TypeVar" and not self.bound("TypeVar")
        if not type_var:
            self.expr(func, "callee")
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise _Refused(arg, "a starred argument (*)")
            self.expr(arg)
        for keyword in node.keywords:
            if keyword.arg is None:
                raise _Refused(keyword.value, "a keyword unpacking (**)")
            self.expr(keyword.value)
        if type_var and not (len(node.args) == 1 and not node.keywords and isinstance(node.args[0], ast.Constant)
                             and isinstance(node.args[0].value, str)):
            raise _Refused(node, 'a call of TypeVar otherwise than TypeVar("name")')


def _dotted_parts(node: ast.expr) -> tuple[str, ...] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return (node.id, *reversed(parts))


def _dotted(node: ast.expr) -> str | None:
    parts = _dotted_parts(node)
    return ".".join(parts) if parts else None


def _last_binding(body: list[ast.stmt]) -> str | None:
    """The name the last statement of ``body`` assigns, if it assigns one name."""
    if not body:
        return None
    last = body[-1]
    targets = last.targets if isinstance(last, ast.Assign) else [last.target] if isinstance(last, ast.AnnAssign) else []
    return targets[0].id if len(targets) == 1 and isinstance(targets[0], ast.Name) else None


_KINDS = {
    ast.Lambda: "a lambda", ast.ListComp: "a list comprehension", ast.SetComp: "a set comprehension",
    ast.DictComp: "a dict comprehension", ast.GeneratorExp: "a generator expression", ast.JoinedStr: "an f-string",
    ast.FormattedValue: "an f-string", ast.NamedExpr: "an assignment expression (:=)", ast.Await: "an await",
    ast.Yield: "a yield", ast.YieldFrom: "a yield", ast.Starred: "a starred expression (*)",
    ast.Call: "a call's result",
    ast.Subscript: "a subscript", ast.Constant: "a constant", ast.Tuple: "a tuple", ast.List: "a list",
    ast.Dict: "a dict", ast.BinOp: "an operation", ast.Import: "an import", ast.ImportFrom: "an import",
    ast.ClassDef: "a class", ast.Global: "a global statement", ast.Nonlocal: "a nonlocal statement",
    ast.Try: "a try statement", ast.Raise: "a raise statement", ast.Delete: "a del statement",
    ast.AsyncFunctionDef: "an async function", ast.AsyncFor: "an async for", ast.AsyncWith: "an async with",
    ast.For: "a for loop", ast.While: "a while loop", ast.Return: "a return", ast.If: "an if statement",
    ast.With: "a with statement", ast.Assign: "an assignment",
}


_NAMED_KINDS = {"TryStar": "a try statement", "Match": "a match statement", "TypeAlias": "a type alias"}


def _kind(node: ast.AST) -> str:
    """What ``node`` is, in words."""
    name = type(node).__name__
    return _KINDS.get(type(node)) or _NAMED_KINDS.get(name) or f"a Python {name} ({ast.unparse(node)[:40]})"
