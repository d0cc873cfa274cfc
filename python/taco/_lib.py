"""Loading libtaco: find libtaco.so and taco.h, build the cffi declarations from
the real header text, and dlopen the library (cffi ABI mode).

Search order, for the library:
  1. $TACO_LIBRARY (a path to libtaco.so)
  2. the copy shipped inside this package (taco/libtaco.so)
  3. the system (ctypes.util.find_library("taco"))
and for the header:
  1. $TACO_INCLUDE (a path to taco.h, or to the directory holding it)
  2. with $TACO_LIBRARY set: include/taco.h beside that library or in its prefix
     (a build directory, or an install prefix's lib/ and include/)
  3. the copy shipped inside this package (taco/include/taco.h)
  4. <repo>/include/taco.h, for a development checkout

The header is the single source of truth: enums, structs, integer constants and
function declarations all come from it. Macros cffi cannot take (expressions such
as ((size_t)-1), the multi-line TACO_CONFIG_INITIALIZER) are evaluated here from
their own text (see `constants()` and `config_initializer()`).
"""

from __future__ import annotations

import ast
import ctypes.util
import functools
import importlib.resources
import os
import re
import threading
from pathlib import Path

import cffi

__all__ = [
    "ffi",
    "lib",
    "library_path",
    "header_path",
    "constants",
    "config_initializer",
    "enum_values",
]

_PKG_DIR = Path(__file__).resolve().parent


class LibraryNotFoundError(ImportError):
    """libtaco.so or taco.h could not be located."""


# ------------------------------------------------------------------ locating


def _package_file(*parts: str) -> Path | None:
    try:
        res = importlib.resources.files(__package__ or "taco").joinpath(*parts)
        if res.is_file():
            return Path(str(res))
    except (ModuleNotFoundError, TypeError, NotADirectoryError):
        pass
    p = _PKG_DIR.joinpath(*parts)
    return p if p.is_file() else None


@functools.lru_cache(maxsize=None)
def header_path() -> Path:
    """The taco.h the declarations are read from."""
    env = os.environ.get("TACO_INCLUDE")
    if env:
        p = Path(env)
        if p.is_dir():
            p = p / "taco.h"
        if not p.is_file():
            raise LibraryNotFoundError(f"TACO_INCLUDE={env!r}: no taco.h there")
        return p.resolve()
    # the header that belongs to an explicitly chosen library: a build dir or install prefix
    lib_env = os.environ.get("TACO_LIBRARY")
    if lib_env:
        d = Path(lib_env).resolve().parent
        for p in (d / "include" / "taco.h", d.parent / "include" / "taco.h"):
            if p.is_file():
                return p
    p = _package_file("include", "taco.h")
    if p is not None:
        return p
    # Development checkout: python/taco/_lib.py -> <repo>/include/taco.h
    p = _PKG_DIR.parent.parent / "include" / "taco.h"
    if p.is_file():
        return p.resolve()
    raise LibraryNotFoundError(
        "taco.h not found: set TACO_INCLUDE to its path, or install the taco package "
        "(which ships include/taco.h)"
    )


@functools.lru_cache(maxsize=None)
def library_path() -> str:
    """The path (or soname) of the libtaco.so that is loaded."""
    env = os.environ.get("TACO_LIBRARY")
    if env:
        if not Path(env).is_file():
            raise LibraryNotFoundError(f"TACO_LIBRARY={env!r}: no such file")
        return str(Path(env).resolve())
    p = _package_file("libtaco.so")
    if p is not None:
        return str(p)
    found = ctypes.util.find_library("taco")
    if found:
        return found
    raise LibraryNotFoundError(
        "libtaco.so not found: set TACO_LIBRARY to its path (e.g. build/libtaco.so), "
        "install the taco package (pip install .), or put it on the linker path"
    )


# ------------------------------------------------------------ header -> cdef

_INT_LITERAL = re.compile(r"^-?(0[xX][0-9a-fA-F]+|[0-9]+)[uUlL]*$")
_DEFINE = re.compile(r"^#\s*define\s+([A-Za-z_]\w*)(\([^)]*\))?\s*(.*)$")
_CAST = re.compile(
    r"\(\s*(size_t|unsigned\s+int|unsigned|int|long|unsigned\s+long|long\s+long|"
    r"unsigned\s+long\s+long|int64_t|uint64_t|int32_t|uint32_t)\s*\)"
)
_CAST_BITS = {
    "size_t": (64, False), "unsigned int": (32, False), "unsigned": (32, False),
    "int": (32, True), "long": (64, True), "unsigned long": (64, False),
    "long long": (64, True), "unsigned long long": (64, False), "int64_t": (64, True),
    "uint64_t": (64, False), "int32_t": (32, True), "uint32_t": (32, False),
}

_MANGLED = {f"__cast_{'_'.join(k.split())}__": k for k in _CAST_BITS}


def _strip_comments(text: str) -> str:
    text = re.sub(r"\\\n", " ", text)  # line splicing comes before comments in C
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n") + " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def parse_header(text: str) -> tuple[str, dict[str, str]]:
    """Split header text into (cdef text for cffi, {macro: body} of dropped macros).

    Keeps declarations and `#define NAME <integer literal>`; drops the include
    guard, #include lines, `#ifdef __cplusplus` blocks, and macros whose body is
    not a plain integer (returned so the caller can evaluate them).
    """
    out: list[str] = []
    dropped: dict[str, str] = {}
    # stack of booleans: is this conditional block skipped?
    stack: list[bool] = []
    for raw in _strip_comments(text).split("\n"):
        line = raw.strip()
        skipping = any(stack)
        if line.startswith("#"):
            directive = line[1:].strip()
            word = directive.split(None, 1)[0] if directive else ""
            if word in ("if", "ifdef", "ifndef"):
                # Only the C++ guard is skipped; other conditionals are the include guard.
                stack.append("__cplusplus" in directive and word != "ifndef")
            elif word in ("else", "elif"):
                if stack:
                    stack[-1] = not stack[-1]
            elif word == "endif":
                if stack:
                    stack.pop()
            elif word == "define" and not skipping:
                m = _DEFINE.match("#" + directive)
                if m is None:
                    continue
                name, params, body = m.group(1), m.group(2), m.group(3).strip()
                if params is not None or not body:
                    if body:
                        dropped[name] = body
                    continue  # function-like macro, or the guard's `#define TACO_H_`
                if _INT_LITERAL.match(body):
                    out.append(f"#define {name} {body.rstrip('uUlL')}")
                else:
                    dropped[name] = body
            # #include, #pragma, #undef, #error: nothing cffi needs
            continue
        if not skipping and line:
            out.append(raw)
    return "\n".join(out) + "\n", dropped


class _Evaluator:
    """Evaluates the integer macros cffi cannot take: literals, + - * / % << >> | & ~,
    parentheses, casts to integer types, and names of other integer macros."""

    def __init__(self, known: dict[str, int]):
        self.known = known

    def __call__(self, body: str) -> int:
        expr = _CAST.sub(lambda m: f" __cast_{'_'.join(m.group(1).split())}__ ", body)
        expr = re.sub(r"\b(0[xX][0-9a-fA-F]+|[0-9]+)[uUlL]+\b", r"\1", expr)
        # a cast applies to the unary expression after it: make it a call
        expr = re.sub(r"__cast_(\w+?)__\s*(-?\s*(?:\w+|\([^()]*\)))", r"__cast_\1__(\2)", expr)
        return self._eval(ast.parse(expr.strip(), mode="eval").body)

    def _eval(self, node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in self.known:
                return self.known[node.id]
            raise ValueError(f"unknown name {node.id}")
        if isinstance(node, ast.UnaryOp):
            v = self._eval(node.operand)
            ops = {ast.USub: lambda a: -a, ast.UAdd: lambda a: a, ast.Invert: lambda a: ~a}
            return ops[type(node.op)](v)
        if isinstance(node, ast.BinOp):
            a, b = self._eval(node.left), self._eval(node.right)
            ops = {
                ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                ast.Div: lambda: int(a / b), ast.FloorDiv: lambda: a // b, ast.Mod: lambda: a % b,
                ast.LShift: lambda: a << b, ast.RShift: lambda: a >> b,
                ast.BitOr: lambda: a | b, ast.BitAnd: lambda: a & b, ast.BitXor: lambda: a ^ b,
            }
            return ops[type(node.op)]()
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id.startswith("__cast_") and len(node.args) == 1):
            bits, signed = _CAST_BITS[_MANGLED[node.func.id]]
            v = self._eval(node.args[0]) & ((1 << bits) - 1)
            if signed and v >= 1 << (bits - 1):
                v -= 1 << bits
            return v
        raise ValueError(f"not an integer constant expression: {ast.dump(node)}")


class _Loaded:
    def __init__(self, header: Path):
        self.header = header
        text = header.read_text()
        self.cdef, self.dropped = parse_header(text)
        self.ffi = cffi.FFI()
        self.ffi.cdef(self.cdef)
        # integer #defines cffi took, read back from the declarations we gave it
        known: dict[str, int] = {}
        for m in re.finditer(r"^#define (\w+) (\S+)$", self.cdef, flags=re.M):
            known[m.group(1)] = int(m.group(2), 0)
        # the others, evaluated in header order (later ones may use earlier ones)
        ev = _Evaluator(known)
        self.unevaluated: dict[str, str] = {}
        for name, body in self.dropped.items():
            try:
                known[name] = ev(body)
            except (ValueError, SyntaxError, KeyError, ZeroDivisionError):
                self.unevaluated[name] = body
        self.constants = known


# One FFI and one library per process, also when threads make their first calls at once: cdata of
# two FFIs do not mix ("the types are different"), and lru_cache does not serialise first calls.
_LOAD_LOCK = threading.RLock()  # re-entered: the library's load parses the header first
_LOADED: dict = {}


def _once(key: str, make):
    v = _LOADED.get(key)
    if v is None:
        with _LOAD_LOCK:
            v = _LOADED.get(key)
            if v is None:
                v = _LOADED[key] = make()
    return v


def _loaded() -> _Loaded:
    return _once("header", lambda: _Loaded(header_path()))


def ffi() -> cffi.FFI:
    """The cffi FFI holding the declarations of taco.h (parsed once, cached)."""
    return _loaded().ffi


def lib():
    """The dlopen'ed libtaco (cached). Raises LibraryNotFoundError if absent."""
    return _once("lib", _dlopen)


def _dlopen():
    path = library_path()
    try:
        return ffi().dlopen(path)
    except OSError as e:
        raise LibraryNotFoundError(f"cannot load {path}: {e}") from e


def constants() -> dict[str, int]:
    """Every integer macro of taco.h, including those evaluated here
    (e.g. TACO_CONFIG_UNDEF_SIZE = ((size_t)-1))."""
    return dict(_loaded().constants)


def enum_values(ctype: str) -> dict[str, int]:
    """{name: value} of an enum type of taco.h, e.g. enum_values("tacoResult_t")."""
    return dict(ffi().typeof(ctype).relements)


def _split_top_level(s: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def config_initializer():
    """A new `tacoConfig_t*` filled as TACO_CONFIG_INITIALIZER does in C.

    The initializer's text is read from the header and evaluated element by
    element (sizeof(T), NULL, integer constants), assigned to the struct's
    fields in declaration order, so it follows the header when fields are added.
    """
    ld = _loaded()
    body = ld.dropped.get("TACO_CONFIG_INITIALIZER")
    if body is None:
        raise RuntimeError("taco.h has no TACO_CONFIG_INITIALIZER")
    inner = body.strip()
    if not (inner.startswith("{") and inner.endswith("}")):
        raise RuntimeError(f"TACO_CONFIG_INITIALIZER is not a brace list: {body!r}")
    f = ld.ffi
    cfg = f.new("tacoConfig_t*")
    fields = [name for name, _ in f.typeof("tacoConfig_t").fields]
    items = _split_top_level(inner[1:-1])
    if len(items) > len(fields):
        raise RuntimeError("TACO_CONFIG_INITIALIZER has more values than tacoConfig_t has fields")
    ev = _Evaluator(ld.constants)
    for name, item in zip(fields, items):
        m = re.fullmatch(r"sizeof\s*\(\s*(\w+)\s*\)", item)
        if m:
            value = f.sizeof(m.group(1))
        elif item == "NULL":
            value = f.NULL
        else:
            value = ev(item)
        setattr(cfg, name, value)
    return cfg
