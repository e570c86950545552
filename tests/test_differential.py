"""A slice of the differential testing campaign (`python -m fuzz`): random kernels from
fixed seeds, each run on the device and by the host model of vksycl's semantics, with
no value differing and no valid program refused."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from fuzz import program as P
from fuzz.campaign import Checker, campaign, reproducer
from fuzz.generate import Caps, generate
from fuzz.interpret import Interpreter

SEED = 2024
COUNT = 200


def test_a_slice_of_the_campaign_finds_no_mismatch(tmp_path):
    s = campaign(SEED, COUNT, jobs=2, out=str(tmp_path), reduce_budget=0)
    report = "\n".join(f"#{f.index} {f.kind}: {f.detail}\n  {f.path}" for f in s.findings)
    assert s.findings == [], report
    assert s.run >= COUNT * 0.9  # programs the generator made valid
    assert s.kinds["ok"] == s.run
    assert s.items - s.undefined >= s.items * 0.8  # most work-items have defined results


def test_a_seed_makes_the_same_program():
    caps = Caps()
    assert P.render(generate(7, 3, caps)) == P.render(generate(7, 3, caps))
    assert P.render(generate(7, 3, caps)) != P.render(generate(7, 4, caps))


def test_the_model_follows_vksycl_semantics_where_python_and_cpp_differ():
    """Floor division and modulo, int8 promotion, wrapping, and a mathematical comparison
    of a signed with an unsigned value, in a program built by hand."""
    i = P.Query("id")
    body = (P.Assign("x", P.Index("in_int8", i)),
            P.Store("o_int32", i, P.Bin("//", P.Var("x"), P.Lit(-3))),
            P.Store("o_int32", P.Bin("+", P.Lit(4), i), P.Bin("%", P.Var("x"), P.Lit(-3))),
            P.Store("o_int32", P.Bin("+", P.Lit(8), i), P.Bin("*", P.Var("x"), P.Var("x"))),
            P.Store("o_bool", i, P.Compare(("<",), (P.Var("x"), P.Cast("uint32", P.Lit(1))))))
    x = (-128, -7, 5, 127)
    p = P.Program("hand", 4, 0, (P.Buffer("in_int8", "int8", "in", x),
                                 P.Buffer("o_int32", "int32", "out", (0,) * 12),
                                 P.Buffer("o_bool", "bool", "out", (False,) * 4)), body)
    want = Interpreter(p, 8).run()
    assert want.memory["o_int32"] == [v // -3 for v in x] + [v % -3 for v in x] + \
        [v * v for v in x]
    assert want.memory["o_bool"] == [True, True, False, False]


def test_a_reproducer_file_checks_its_program_again(tmp_path):
    p = generate(3, 1, Caps(), "scalar")
    path = tmp_path / "repro.py"
    path.write_text(reproducer(p))
    spec = importlib.util.spec_from_file_location("repro", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert P.render(module.PROGRAM) == P.render(p)
    checker = Checker(Path(tmp_path / "work"))
    want = checker.expect(p)
    outcome = checker.compare(module, p, want)
    assert outcome.kind == "ok", outcome.detail
    assert np.count_nonzero(want.valid) > 0


def test_the_models_sub_groups_stay_inside_their_work_group():
    """A device whose sub-groups (32 lanes, an NVIDIA GPU's) are wider than the
    work-groups (8 items): each work-group is one sub-group of its own size, so a
    sub-group's any_of sees its own work-group only, and a lane past its end is
    undefined."""
    i = P.Query("id")
    body = (P.GroupAssign("g", "any_of_group", "sg", P.Query("group_id")),
            P.Store("o_int32", i, P.Var("g")),
            P.GroupAssign("h", "select_from_group", "sg", i, arg=P.Lit(7)),
            P.Store("o_int32", P.Bin("+", P.Lit(16), i), P.Var("h")))
    p = P.Program("wide", 16, 8, (P.Buffer("o_int32", "int32", "out", (0,) * 32),), body)
    want = Interpreter(p, 32).run()
    assert want.memory["o_int32"][:16] == [0] * 8 + [1] * 8
    assert want.memory["o_int32"][16:] == [7] * 8 + [15] * 8
