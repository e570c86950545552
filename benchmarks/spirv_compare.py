"""The SPIR-V vksycl's compiler emits for the kernels of benchmarks/kernels.py against what
glslang emits for the same algorithms written by hand in GLSL (benchmarks/kernels_glsl.py),
counted instruction by instruction, with no timing: where the generated code does more
work than the hand GLSL, before the driver's compiler sees it.

vksycl's modules come from running each case's vksycl entry once at kernels.py's `--small`
sizes with VKSYCL_DUMP_SPIRV set; the GLSL modules from `compile_glsl`, as kernels.py
builds its GLSL peers (glslang -V, unoptimised: its function-local variables go through
OpVariable / OpLoad / OpStore, which every driver promotes to registers, so those are
counted apart). Per kernel, one table of: instructions in function bodies; global
(StorageBuffer / PhysicalStorageBuffer), work-group and push-constant loads and stores;
address arithmetic; 64- and 32-bit integer arithmetic; integer conversions; float
arithmetic; branches and loops with their loop control; barriers and group operations;
NoContraction, RelaxedPrecision, Restrict, Aliased and NonWritable decorations;
GLSL.std.450 instructions by name; then a line of the differences. The counts are static
(a loop unrolled at trace time counts its body once per copy, a loop left a loop once).

    .venv/bin/python benchmarks/spirv_compare.py [--only NAME ...]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

DUMP = Path(tempfile.mkdtemp(prefix="vksycl-spirv-compare-"))
os.environ["VKSYCL_DUMP_SPIRV"] = str(DUMP)  # read when a kernel compiles, set before

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import kernels  # noqa: E402

import spirv_gen  # noqa: E402
import vksycl as sycl  # noqa: E402
from spirv_gen.grammar import GLSL_SET, grammar  # noqa: E402
from vksycl.runtime.glsl import compile_glsl  # noqa: E402

# storage classes
UNIFORM, WORKGROUP, PRIVATE, FUNCTION, PUSH, STORAGE, PHYSICAL = 2, 4, 6, 7, 9, 12, 5349
CROSS_WORKGROUP = 5
GLOBAL = {UNIFORM, CROSS_WORKGROUP, STORAGE, PHYSICAL}
LOCAL_VARS = {PRIVATE, FUNCTION}

INT_ARITH = {"OpIAdd", "OpISub", "OpIMul", "OpSDiv", "OpUDiv", "OpSRem", "OpSMod", "OpUMod",
             "OpSNegate", "OpShiftLeftLogical", "OpShiftRightLogical",
             "OpShiftRightArithmetic", "OpBitwiseAnd", "OpBitwiseOr", "OpBitwiseXor", "OpNot",
             "OpIAddCarry", "OpISubBorrow", "OpUMulExtended", "OpSMulExtended"}
FLOAT_ARITH = {"OpFAdd", "OpFSub", "OpFMul", "OpFDiv", "OpFRem", "OpFMod", "OpFNegate",
               "OpVectorTimesScalar", "OpMatrixTimesVector", "OpDot"}
FLOAT_CONVERT = {"OpConvertSToF", "OpConvertUToF", "OpConvertFToS", "OpConvertFToU",
                 "OpFConvert"}
ACCESS = {"OpAccessChain", "OpInBoundsAccessChain", "OpPtrAccessChain",
          "OpInBoundsPtrAccessChain"}
NO_CONTRACTION, RELAXED_PRECISION = 42, 0
RESTRICT, ALIASED, NON_WRITABLE = 19, 20, 24
UNROLL, DONT_UNROLL = 1, 2

# the table's rows: key, label
ROWS = [
    ("body", "instructions in function bodies"),
    ("body_regs", "  less function-local var loads/stores"),
    ("functions", "functions (calls)"),
    ("g_load", "global loads (of vectors)"),
    ("g_store", "global stores (of vectors)"),
    ("wg_load", "work-group loads (of vectors)"),
    ("wg_store", "work-group stores (of vectors)"),
    ("push_load", "push-constant / uniform loads"),
    ("access", "access chains"),
    ("int64", "64-bit int arithmetic"),
    ("int32", "32-bit int arithmetic"),
    ("int_convert", "int conversions (S/UConvert)"),
    ("bitcast", "OpBitcast"),
    ("ptr_convert", "pointer <-> int conversions"),
    ("float_arith", "float arithmetic"),
    ("float_convert", "int <-> float conversions"),
    ("compare_select", "compares / selects / phis"),
    ("cond_branch", "conditional branches (switches)"),
    ("loops", "loops: Unroll / DontUnroll / none"),
    ("barrier", "barriers (memory barriers)"),
    ("group", "group ops"),
    ("atomic", "atomics"),
    ("no_contraction", "NoContraction decorations"),
    ("relaxed", "RelaxedPrecision decorations"),
    ("memory_decorations", "Restrict / Aliased / NonWritable"),
]


def analyse(binary: bytes) -> dict[str, object]:
    """Counts for one module."""
    module = spirv_gen.read(binary)
    insts = module.instructions
    ext_names = grammar().ext_sets[GLSL_SET].by_opcode
    types: dict[int, tuple] = {}  # type id -> ("int", width) / ("float", w) / ("ptr", sc, to)
    value_type: dict[int, int] = {}
    glsl_sets: set[int] = set()
    for i in insts:
        op, w = i.opname, i.words
        if op == "OpTypeInt":
            types[w[0]] = ("int", w[1])
        elif op == "OpTypeFloat":
            types[w[0]] = ("float", w[1])
        elif op == "OpTypeVector":
            types[w[0]] = ("vec", w[1], w[2])
        elif op in ("OpTypePointer", "OpTypeForwardPointer"):
            types.setdefault(w[0], ("ptr", w[1], w[2] if len(w) > 2 else None))
        elif op == "OpExtInstImport" and i.words[1:] and _string(w[1:]) == GLSL_SET:
            glsl_sets.add(w[0])
        if i.info.has_type and i.info.has_result:
            value_type[i.result_id] = i.result_type

    def scalar(t: int) -> tuple:
        d = types.get(t, ("?",))
        return scalar(d[1]) if d[0] == "vec" else d

    def is_vector(t: int) -> bool:
        return types.get(t, ("?",))[0] == "vec"

    def storage(pointer: int) -> int | None:
        d = types.get(value_type.get(pointer, -1), ("?",))
        return d[1] if d[0] == "ptr" else None

    c: Counter = Counter()
    ext: Counter = Counter()
    in_body = False
    for i in insts:
        op, w = i.opname, i.words
        if op == "OpDecorate" and len(w) > 1:
            c["no_contraction"] += w[1] == NO_CONTRACTION
            c["relaxed"] += w[1] == RELAXED_PRECISION
            c["restrict"] += w[1] == RESTRICT
            c["aliased"] += w[1] == ALIASED
            c["non_writable"] += w[1] == NON_WRITABLE
        elif op == "OpMemberDecorate" and len(w) > 2:
            c["relaxed"] += w[2] == RELAXED_PRECISION
            c["non_writable"] += w[2] == NON_WRITABLE
        if op == "OpFunction":
            c["functions"] += 1
        elif op == "OpLabel":
            in_body = True
            continue
        elif op == "OpFunctionEnd":
            in_body = False
        if not in_body:
            continue
        c["body"] += 1
        t = scalar(i.result_type) if i.info.has_type else ("?",)
        if op == "OpLoad":
            sc = storage(w[2])
            key = ("g_load" if sc in GLOBAL else "wg_load" if sc == WORKGROUP
                   else "push_load" if sc == PUSH else "local" if sc in LOCAL_VARS else "other")
            c[key] += 1
            if sc in GLOBAL and is_vector(w[0]):
                c["g_load_vec"] += 1
            if sc == WORKGROUP and is_vector(w[0]):
                c["wg_load_vec"] += 1
        elif op == "OpStore":
            sc = storage(w[0])
            key = ("g_store" if sc in GLOBAL else "wg_store" if sc == WORKGROUP
                   else "local" if sc in LOCAL_VARS else "other")
            c[key] += 1
            if sc in GLOBAL and is_vector(value_type.get(w[1], -1)):
                c["g_store_vec"] += 1
            if sc == WORKGROUP and is_vector(value_type.get(w[1], -1)):
                c["wg_store_vec"] += 1
        elif op == "OpVariable" and w[2] in LOCAL_VARS:
            c["local"] += 1
        elif op in ACCESS:
            c["access"] += 1
        elif op in INT_ARITH and t[0] == "int":
            c["int64" if t[1] == 64 else "int32"] += 1
        elif op in ("OpSConvert", "OpUConvert"):
            c["int_convert"] += 1
        elif op == "OpBitcast":
            c["bitcast"] += 1
        elif op in ("OpConvertUToPtr", "OpConvertPtrToU"):
            c["ptr_convert"] += 1
        elif op in FLOAT_ARITH:
            c["float_arith"] += 1
        elif op in FLOAT_CONVERT:
            c["float_convert"] += 1
        elif op in ("OpSelect", "OpPhi") or (
                op.startswith(("OpI", "OpS", "OpU", "OpF", "OpLogical"))
                and any(s in op for s in ("Equal", "Less", "Greater", "Logical"))):
            c["compare_select"] += 1
        elif op == "OpBranchConditional":
            c["cond_branch"] += 1
        elif op == "OpSwitch":
            c["switch"] += 1
        elif op == "OpLoopMerge":
            control = w[2]
            c["loops"] += 1
            c["unroll"] += bool(control & UNROLL)
            c["dont_unroll"] += bool(control & DONT_UNROLL)
        elif op == "OpControlBarrier":
            c["barrier"] += 1
        elif op == "OpMemoryBarrier":
            c["mem_barrier"] += 1
        elif op.startswith("OpGroup"):
            c["group"] += 1
        elif op.startswith("OpAtomic"):
            c["atomic"] += 1
        elif op == "OpFunctionCall":
            c["calls"] += 1
        elif op == "OpExtInst" and w[2] in glsl_sets:
            info = ext_names.get(w[3])
            name = info.opname if info else str(w[3])
            ext[name] += 1
            if name in ("Fma", "Exp", "Exp2", "Log", "Sqrt", "InverseSqrt", "FMax", "FMin",
                        "FAbs", "Floor", "Pow", "Round", "Trunc", "Sin", "Cos"):
                c["float_arith"] += 1
    c["body_regs"] = c["body"] - c["local"]
    return {"counts": c, "ext": ext}


def _string(words: tuple[int, ...]) -> str:
    raw = b"".join(x.to_bytes(4, "little") for x in words)
    return raw.split(b"\0", 1)[0].decode()


def cell(key: str, a: dict) -> str:
    c = a["counts"]
    if key == "g_load":
        return f"{c['g_load']} ({c['g_load_vec']})"
    if key == "g_store":
        return f"{c['g_store']} ({c['g_store_vec']})"
    if key in ("wg_load", "wg_store"):
        return f"{c[key]} ({c[key + '_vec']})"
    if key == "memory_decorations":
        return f"{c['restrict']}/{c['aliased']}/{c['non_writable']}"
    if key == "functions":
        return f"{c['functions']} ({c['calls']})"
    if key == "cond_branch":
        return f"{c['cond_branch']} ({c['switch']})"
    if key == "loops":
        return f"{c['loops']}: {c['unroll']}/{c['dont_unroll']}/" \
               f"{c['loops'] - c['unroll'] - c['dont_unroll']}"
    if key == "barrier":
        return f"{c['barrier']} ({c['mem_barrier']})"
    return str(c[key])


def differences(ours: dict, theirs: dict) -> str:
    """One line: what vksycl's module has more or less of."""
    a, b = ours["counts"], theirs["counts"]
    parts = []
    for key, label in (("body_regs", "instructions (less local vars)"),
                       ("int64", "64-bit int ops"), ("int32", "32-bit int ops"),
                       ("int_convert", "int conversions"), ("bitcast", "bitcasts"),
                       ("ptr_convert", "pointer<->int conversions"),
                       ("access", "access chains"), ("float_arith", "float ops"),
                       ("compare_select", "compares/selects"),
                       ("cond_branch", "conditional branches"),
                       ("g_load", "global loads"), ("g_store", "global stores"),
                       ("wg_load", "work-group loads"), ("wg_store", "work-group stores"),
                       ("barrier", "barriers"), ("group", "group ops"),
                       ("no_contraction", "NoContraction"), ("relaxed", "RelaxedPrecision"),
                       ("restrict", "Restrict"), ("non_writable", "NonWritable")):
        d = a[key] - b[key]
        if d:
            parts.append(f"{d:+d} {label}")
    g = a["g_load"] + a["g_store"]
    if g and a["int64"]:
        parts.append(f"{a['int64'] / g:.1f} 64-bit int ops per global access "
                     f"(GLSL {b['int64'] / max(1, b['g_load'] + b['g_store']):.1f})")
    if (a["g_load_vec"], a["g_store_vec"]) != (b["g_load_vec"], b["g_store_vec"]):
        parts.append(f"vector global loads/stores {a['g_load_vec']}/{a['g_store_vec']} vs "
                     f"{b['g_load_vec']}/{b['g_store_vec']}")
    lc = [(a[k], b[k]) for k in ("unroll", "dont_unroll")]
    if lc[0] != lc[1] or a["loops"] != b["loops"]:
        parts.append(f"loops {a['loops']} ({a['unroll']} Unroll, {a['dont_unroll']} "
                     f"DontUnroll) vs {b['loops']} ({b['unroll']}, {b['dont_unroll']})")
    ext = sorted(set(ours["ext"]) | set(theirs["ext"]))
    ed = [f"{n} {ours['ext'][n] - theirs['ext'][n]:+d}" for n in ext
          if ours["ext"][n] != theirs["ext"][n]]
    if ed:
        parts.append("GLSL.std.450 " + ", ".join(ed))
    return "vksycl: " + ("; ".join(parts) if parts else "the same counts")


def table(title: str, columns: list[tuple[str, dict]]) -> None:
    print(f"\n{title}")
    width = max(len(label) for _, label in ROWS) + 2
    heads = [name for name, _ in columns]
    cw = max(12, *(len(h) + 2 for h in heads))
    print(" " * width + "".join(h.rjust(cw) for h in heads))
    for key, label in ROWS:
        print(label.ljust(width) + "".join(cell(key, a).rjust(cw) for _, a in columns))
    names = sorted(set().union(*(a["ext"] for _, a in columns)))
    for n in names:
        print(f"GLSL.std.450 {n}".ljust(width)
              + "".join(str(a["ext"][n]).rjust(cw) for _, a in columns))


def vksycl_modules(q: sycl.queue, name: str, make) -> tuple[list[Path], list[str]]:
    """The modules vksycl compiled for one case, and the GLSL sources of its peers."""
    sources: list[str] = []
    original = kernels.glsl

    def capture(mem, source, *rest):
        sources.append(source)
        return original(mem, source, *rest)

    case_dir = DUMP / name
    os.environ["VKSYCL_DUMP_SPIRV"] = str(case_dir)
    kernels.glsl = capture
    try:
        case = make(q, kernels.Peers(None, None))
    finally:
        kernels.glsl = original
    try:
        case.entries[0].run()  # vksycl's entry: compiles, dumps
    finally:
        case.free()
    return sorted(case_dir.glob("*.spv")), sources


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="+", default=None, help="compare only these kernels")
    args = ap.parse_args()
    sizes = argparse.Namespace(mandelbrot=kernels.SMALL["mandelbrot"],
                               matmul=kernels.SMALL["matmul"], bodies=kernels.SMALL["bodies"],
                               grid=kernels.SMALL["grid"], softmax=kernels.SMALL["softmax"])
    todo = kernels.cases(sizes)
    names = args.only or list(todo)
    unknown = set(names) - set(todo)
    if unknown:
        ap.error(f"unknown kernels {sorted(unknown)}; there are {sorted(todo)}")
    q = sycl.queue()
    print(f"device: {q.get_device().get_info(sycl.info.device.name)}; vksycl modules as "
          f"compiled (dumped to {DUMP}), GLSL by glslang -V (unoptimised)")
    print("cells: vksycl | hand GLSL; (n) after a count: of vectors / calls / switches / "
          "memory barriers")
    for name in names:
        spvs, sources = vksycl_modules(q, name, todo[name])
        theirs = [analyse(compile_glsl(s)) for s in sources]
        if not spvs or not theirs:
            print(f"\n{name}: no {'vksycl module' if not spvs else 'GLSL peer'}")
            continue
        glsl = theirs[0]
        for spv in spvs:
            ours = analyse(spv.read_bytes())
            label = spv.stem.rsplit("_", 1)[0]
            title = f"{name}: {label}" if len(spvs) > 1 else f"{name} ({label})"
            table(title, [("vksycl", ours), ("hand GLSL", glsl)])
            print(differences(ours, glsl))


if __name__ == "__main__":
    main()
