"""The tables come from the Khronos grammar; they agree with the headers' own JSON."""

import json
import re

import pytest

from spirv_gen.grammar import GLSL_SET, grammar, grammar_dir, load_grammar


@pytest.fixture(scope="module")
def header_enums() -> dict[str, dict[str, int]]:
    """spirv.json and GLSL.std.450.h, shipped beside the grammar, as an independent source."""
    d = grammar_dir()
    spv = json.loads((d / "spirv.json").read_text())["spv"]
    enums = {e["Name"]: e["Values"] for e in spv["enum"]}
    text = (d / "GLSL.std.450.h").read_text()
    enum_body = text[text.index("enum GLSLstd450"):]
    glsl = dict(re.findall(r"GLSLstd450(\w+) = (\d+)", enum_body))
    enums["GLSL"] = {k: int(v) for k, v in glsl.items() if k not in ("Bad", "Count")}
    return enums


def test_grammar_found_in_the_installed_headers_package():
    d = grammar_dir()
    assert (d / "spirv.core.grammar.json").is_file()
    assert "cmeel.prefix" in str(d) or str(d).startswith("/usr")


def test_grammar_dir_override(monkeypatch, tmp_path):
    monkeypatch.setenv("SPIRV_GEN_GRAMMAR_DIR", str(tmp_path))
    assert grammar_dir() == tmp_path
    with pytest.raises(FileNotFoundError):
        load_grammar(tmp_path)


def test_every_opcode_matches_the_header(header_enums):
    g = grammar()
    ops = header_enums["Op"]
    assert len(ops) > 500
    for name, value in ops.items():
        assert g.instructions[name].opcode == value, name
    assert g.by_opcode[ops["OpIAdd"]].opname == "OpIAdd"


@pytest.mark.parametrize("kind", ["Capability", "Decoration", "BuiltIn", "StorageClass",
                                  "ExecutionMode", "Scope", "GroupOperation"])
def test_enumerants_match_the_header(header_enums, kind):
    k = grammar().kinds[kind]
    for name, value in header_enums[kind].items():
        assert k.by_name[name].value == value, name


def test_bit_enums_match_the_header(header_enums):
    k = grammar().kinds["MemorySemantics"]
    for name, shift in header_enums["MemorySemantics"].items():
        assert k.by_name[name].value == 1 << shift, name


def test_glsl_std_450_matches_its_header(header_enums):
    ext = grammar().ext_sets[GLSL_SET]
    assert len(header_enums["GLSL"]) > 70
    for name, value in header_enums["GLSL"].items():
        assert ext.by_name[name].opcode == value, name


def test_requirements_are_read():
    g = grammar()
    add = g.instruction("GroupNonUniformIAdd")
    assert add.requires.version == (1, 3)
    assert "GroupNonUniformArithmetic" in add.requires.capabilities
    cap = g.enumerant("Capability", "StorageBuffer8BitAccess")
    assert cap.requires.extensions == ("SPV_KHR_8bit_storage",)
    assert cap.requires.version == (1, 5)
    assert g.capability_closure({"Int64Atomics"}) == {"Int64Atomics", "Int64"}
    assert [p.kind for p in g.enumerant("Decoration", "Binding").parameters] == [
        "LiteralInteger"]
    assert g.instruction("IAdd") is g.instruction("OpIAdd")
