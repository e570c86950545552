"""The frontend: a Python function's AST to typed IR.

One `FunctionLowering` (`lowering`) per device-function specialisation walks the AST,
resolves names (locals, closure cells, globals, builtins) and infers types as it goes. A
variable's type is fixed by its first assignment; when a later assignment needs a wider
type (`acc = 0` then `acc += x[i]` with float `x`) the function is lowered again with the
wider type, so Python code means what it says. Python operator semantics are kept (`/`
true division, `//` and `%` floor, short-circuit `and`/`or`, comparison chains), widths
follow C++.

The lowering is composed of one part per kind of node or job, lowest first: `base` (the
shared state), `describe`, `scalars`, `names`, `memory`, `expressions`, `statements`, and
`lowering`, which puts them together.
"""
