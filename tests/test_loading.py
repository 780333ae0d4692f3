"""Declaration files: `bf.load`, `from_dict`, the `Catalog` mapping, and their error messages."""

from __future__ import annotations

from pathlib import Path

import pytest
import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import butcherflow as bf
from butcherflow.methods import files as catalog_files

from_dict = catalog_files.from_dict

RK4 = """
    name = "my-rk4"
    title = "Classical Runge-Kutta"
    family = "runge-kutta"
    order = 4
    reference = "Kutta (1901)"
    description = "ignored by the constructor"
    A = [[0, 0, 0, 0], ["1/2", 0, 0, 0], [0, "1/2", 0, 0], [0, 0, 1, 0]]
    b = ["1/6", "1/3", "1/3", "1/6"]
"""
HEUN = """
    name = "heun"
    family = "runge-kutta"
    A = [[0, 0], [1, 0]]
    b = ["1/2", "1/2"]
"""


# -- valid files ------------------------------------------------------------------------------


def test_valid_file_loads(write_toml) -> None:
    path = write_toml(RK4, name="rk4-copy.toml")  # the stem need not match the name
    method = bf.load(path)
    assert isinstance(method, bf.ButcherTableau)
    assert method.source == str(path)
    assert method.name == "my-rk4"
    assert method.title == "Classical Runge-Kutta"
    assert method.reference == "Kutta (1901)"
    assert method.order == 4
    assert method.b == tuple(sympy.Rational(1, k) for k in (6, 3, 3, 6))
    assert method.c == (0, sympy.Rational(1, 2), sympy.Rational(1, 2), 1)
    assert bf.load(str(path)).source == str(path)  # a str works as well as a Path


def test_each_family_loads_from_a_file(write_toml) -> None:
    strang = bf.load(
        write_toml(
            """
            name = "strang"
            family = "splitting"
            order = 2
            substep_order = 1
            steps = [["A", "1/2"], ["B", 1], ["A", "1/2"]]
            substep = "euler"
            operators = ["A", "B"]
            """,
            name="strang.toml",
        )
    )
    assert isinstance(strang, bf.Splitting)
    assert strang.steps[1] == ("B", 1)
    assert strang.substep_order == 1
    bdf2 = bf.load(
        write_toml(
            """
            name = "bdf-2"
            family = "multistep"
            alpha = ["1/2", -2, "3/2"]
            beta = [0, 0, 1]
            zero_stable = true
            """,
            name="bdf-2.toml",
        )
    )
    assert isinstance(bdf2, bf.LinearMultistep)
    assert bdf2.zero_stable is True
    assert not bdf2.is_explicit
    node = bf.load(
        write_toml(
            """
            name = "node"
            family = "continuous"
            method = "dopri5"
            grid = "positions"
            delta = "1/100"
            rtol = 1e-6
            adjoint = true
            """,
            name="node.toml",
        )
    )
    assert isinstance(node, bf.ContinuousDynamics)
    assert node.adaptive
    assert node.rtol == pytest.approx(1e-6)
    assert node.delta == sympy.Rational(1, 100)


def test_decimal_entries_in_a_file_make_it_numeric(write_toml) -> None:
    method = bf.load(write_toml('family = "runge-kutta"\nA = [[0, 0], [0.5, 0]]\nb = [0, 1.0]\n'))
    assert method.numeric
    assert method.A[1][0] == sympy.Rational(1, 2)


# -- file-level errors ----------------------------------------------------------------------------


def test_syntax_error_reports_file_and_line(write_toml, declaration_error) -> None:
    path = write_toml(
        """
        name = "broken"
        family = "runge-kutta"
        A = [[0, 0], [1, 0]
        b = [1, 0]
        """
    )
    with declaration_error(str(path), "line 4", "TOML") as info:
        bf.load(path)
    assert info.value.source == str(path)


def test_syntax_error_in_a_value(write_toml, declaration_error) -> None:
    path = write_toml('family = "runge-kutta"\norder = four\n')
    with declaration_error(str(path), "line 2"):
        bf.load(path)


def test_file_not_found(tmp_path, declaration_error) -> None:
    missing = tmp_path / "nope.toml"
    with declaration_error(repr(str(missing)), "no such file"):
        bf.load(missing)


def test_directory_is_not_a_declaration(tmp_path, declaration_error) -> None:
    with declaration_error(str(tmp_path)):
        bf.load(tmp_path)


def test_non_utf8_file(write_toml, declaration_error) -> None:
    path = write_toml(b'name = "caf\xe9"\nfamily = "runge-kutta"\n')
    with declaration_error(str(path), "UTF-8"):
        bf.load(path)


@pytest.mark.parametrize(
    ("typo", "suggestion"),
    [
        ("ordr", "order"),
        ("refrence", "reference"),
        ("b_hatt", "b_hat"),
        ("row_sums_c", "row_sum_c"),
    ],
)
def test_unknown_key_suggests_the_close_valid_key(
    typo, suggestion, write_toml, declaration_error
) -> None:
    path = write_toml(HEUN + f"{typo} = 4\n")
    with declaration_error(str(path), f"key '{typo}'", f"did you mean '{suggestion}'") as info:
        bf.load(path)
    assert info.value.key == typo


@pytest.mark.parametrize(
    ("family", "body", "typo", "suggestion"),
    [
        ("splitting", 'steps = [["A", 1]]\nsubsteps = "euler"', "substeps", "substep"),
        ("multistep", "alpha = [-1, 1]\nbeta = [1, 0]\nzero_stabel = true", "zero_stabel", None),
        ("continuous", 'method = "dopri5"\nrtoll = 1e-3', "rtoll", "rtol"),
    ],
)
def test_unknown_keys_in_every_family(
    family, body, typo, suggestion, write_toml, declaration_error
) -> None:
    path = write_toml(f'family = "{family}"\n{body}\n')
    fragments = [str(path), f"key '{typo}'"]
    if suggestion:
        fragments.append(f"did you mean '{suggestion}'")
    with declaration_error(*fragments):
        bf.load(path)


def test_key_of_another_family_is_unknown(write_toml, declaration_error) -> None:
    path = write_toml(HEUN + "alpha = [-1, 1]\n")
    with declaration_error(str(path), "key 'alpha'", "valid keys are"):
        bf.load(path)


def test_missing_family(write_toml, declaration_error) -> None:
    path = write_toml('name = "heun"\nA = [[0, 0], [1, 0]]\nb = ["1/2", "1/2"]\n')
    with declaration_error(str(path), "key 'family'", "runge-kutta", "splitting"):
        bf.load(path)


@pytest.mark.parametrize("family", ["runge_kutta", "rk", "Runge-Kutta", ""])
def test_unknown_family(family, write_toml, declaration_error) -> None:
    path = write_toml(f'family = "{family}"\nA = [[0]]\nb = [1]\n')
    with declaration_error(str(path), "key 'family'", repr(family), "runge-kutta"):
        bf.load(path)


@pytest.mark.parametrize(
    ("family", "body", "missing"),
    [
        ("runge-kutta", "A = [[0]]", "b"),
        ("runge-kutta", "b = [1]", "A"),
        ("splitting", 'substep = "exact"', "steps"),
        ("multistep", "alpha = [-1, 1]", "beta"),
        ("continuous", 'grid = "positions"', "method"),
    ],
)
def test_missing_required_key(family, body, missing, write_toml, declaration_error) -> None:
    path = write_toml(f'family = "{family}"\n{body}\n')
    with declaration_error(str(path), f"key '{missing}'", "missing"):
        bf.load(path)


# -- errors raised by the constructors carry the file -----------------------------------------


@pytest.mark.parametrize(
    ("body", "key", "shown"),
    [
        ('A = [[0, 0], ["nan", 0]]\nb = [0, 1]', "A[1][0]", "'nan'"),
        ("A = [[0, 0], [1]]\nb = [0, 1]", "A[1]", "[1]"),
        ("A = [[0, 0], [1, 0]]\nb = [1]", "b", "[1]"),
        ('A = [[0]]\nb = [1]\norder = "4"', "order", "'4'"),
        ('A = [[0]]\nb = [1]\nname = "Euler"', "name", "'Euler'"),
        ("A = [[0]]\nb = [1]\nembedded_order = 1", "embedded_order", "1"),
        ("A = [[0]]\nb = [1979-05-27]", "b[0]", "datetime.date(1979, 5, 27)"),
    ],
)
def test_value_errors_name_file_key_and_value(
    body, key, shown, write_toml, declaration_error
) -> None:
    path = write_toml(f'family = "runge-kutta"\n{body}\n')
    with declaration_error(str(path), f"key '{key}'", shown) as info:
        bf.load(path)
    assert info.value.source == str(path)
    assert info.value.key == key


def test_c_mismatch_in_a_file(write_toml, declaration_error) -> None:
    path = write_toml('family = "runge-kutta"\nA = [[0, 0], ["1/2", 0]]\nb = [0, 1]\nc = [0, 1]\n')
    with declaration_error(str(path), "key 'c[1]'", "c[1] = 1", "1/2"):
        bf.load(path)
    path.write_text(path.read_text() + "row_sum_c = false\n")
    assert bf.load(path).c == (0, 1)


def test_splitting_errors_in_a_file(write_toml, declaration_error) -> None:
    path = write_toml('family = "splitting"\nsteps = [["A", 1], ["B", 0]]\n')
    with declaration_error(str(path), "key 'steps[1][1]'", "0"):
        bf.load(path)


def test_multistep_errors_in_a_file(write_toml, declaration_error) -> None:
    path = write_toml('family = "multistep"\nalpha = [1, 0]\nbeta = [1, 0]\n')
    with declaration_error(str(path), "key 'alpha[1]'", "(got 0)"):
        bf.load(path)


def test_continuous_errors_in_a_file(write_toml, declaration_error) -> None:
    path = write_toml('family = "continuous"\nmethod = "dopri5"\nsteps = 10\n')
    with declaration_error(str(path), "key 'steps'", "10", "adaptive"):
        bf.load(path)


def test_from_dict_without_a_file(declaration_error) -> None:
    data = {"family": "runge-kutta", "A": [[0]], "b": ["x y"]}
    with declaration_error("key 'b[0]'", "'x y'") as info:
        from_dict(data)
    assert info.value.source is None
    assert str(info.value).startswith("key 'b[0]'")
    with declaration_error("here.toml: key 'b[0]'"):
        from_dict(data, source="here.toml")
    assert from_dict({"family": "multistep", "alpha": [-1, 1], "beta": [1, 0]}).steps == 1


# -- the Catalog mapping ------------------------------------------------------------------------


def test_catalog_is_lazy_and_sees_new_files(tmp_path) -> None:
    folder = tmp_path / "solvers"
    folder.mkdir()
    catalog = bf.methods.Catalog(folder)
    assert len(catalog) == 0
    assert list(catalog) == []
    (folder / "heun.toml").write_text(HEUN, encoding="utf-8")
    (folder / "euler.toml").write_text(
        'name = "euler"\nfamily = "runge-kutta"\nA = [[0]]\nb = [1]\n', encoding="utf-8"
    )
    assert list(catalog) == ["euler", "heun"]  # sorted
    assert len(catalog) == 2
    assert "heun" in catalog
    heun = catalog["heun"]
    assert isinstance(heun, bf.ButcherTableau)
    assert heun.source == str(folder / "heun.toml")
    assert catalog["heun"] is heun  # cached
    assert catalog.get("nope") is None
    assert dict(catalog.items())["euler"].stages == 1


def test_catalog_unknown_name_suggests_close_names(tmp_path) -> None:
    catalog = bf.methods.Catalog(tmp_path)
    (tmp_path / "heun.toml").write_text(HEUN, encoding="utf-8")
    with pytest.raises(KeyError, match="did you mean heun"):
        catalog["heunn"]
    assert "heunn" not in catalog


def test_catalog_file_must_declare_its_own_name(tmp_path, declaration_error) -> None:
    catalog = bf.methods.Catalog(tmp_path)
    path = tmp_path / "midpoint.toml"
    path.write_text(HEUN, encoding="utf-8")  # declares name = "heun"
    with declaration_error(str(path), "key 'name'", "'heun'", 'name = "midpoint"'):
        catalog["midpoint"]


def test_catalog_membership_matches_iteration(tmp_path) -> None:
    folder = tmp_path / "solvers"
    folder.mkdir()
    catalog = bf.methods.Catalog(folder)
    (folder / "heun.toml").write_text(HEUN, encoding="utf-8")
    (tmp_path / "outside.toml").write_text(HEUN.replace("heun", "outside"), encoding="utf-8")
    assert list(catalog) == ["heun"]
    for name in ["../outside", str(tmp_path / "outside"), "heun.toml"]:
        assert name not in catalog, f"{name!r} is `in` the catalog but not listed by it"
        assert catalog.get(name) is None


def test_catalog_entry_referring_to_itself(isolated_catalog, declaration_error) -> None:
    path = isolated_catalog.directory / "loop.toml"
    path.write_text(
        'name = "loop"\nfamily = "splitting"\nsteps = [["A", 1]]\nsubstep = "loop"\n',
        encoding="utf-8",
    )
    with declaration_error(str(path), "'loop'", "refers to itself"):
        isolated_catalog["loop"]


def test_catalog_resolve(tmp_path, write_toml, heun) -> None:
    folder = tmp_path / "solvers"
    folder.mkdir()
    catalog = bf.methods.Catalog(folder)
    (folder / "heun.toml").write_text(HEUN, encoding="utf-8")
    assert catalog.resolve(heun) is heun
    assert catalog.resolve("heun").b == heun.b
    path = write_toml(RK4, name="my-rk4.toml")
    assert catalog.resolve(path).name == "my-rk4"
    assert catalog.resolve(str(path)).stages == 4


# -- property: random TOML-ish content -> DeclarationError or a declaration ------------------------

FAMILIES = list(catalog_files.BY_FAMILY)
toml_scalars = st.one_of(
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["1/2", "0.25", "g", "sqrt(2)", "nan", "", "euler", "exact", "dopri5", "A"]),
    st.text(alphabet=st.characters(blacklist_characters="*^"), max_size=6),
)
toml_values = st.recursive(
    toml_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(max_size=3), inner, max_size=3),
    ),
    max_leaves=12,
)
# Plausible values, drawn half of the time, so that random files get past the first checks.
numbers = st.one_of(st.sampled_from([0, 1, -1, "1/2", "1/3", 0.5, "g", "sqrt(2)/2"]), toml_scalars)
vectors = st.lists(numbers, min_size=1, max_size=3)
square = st.integers(1, 3).flatmap(
    lambda s: st.lists(st.lists(numbers, min_size=s, max_size=s), min_size=s, max_size=s)
)
PLAUSIBLE = {
    "name": st.sampled_from(["heun", "my-method", "RK4"]),
    "order": st.integers(-1, 6),
    "A": square,
    "b": vectors,
    "c": vectors,
    "b_hat": vectors,
    "alpha": vectors,
    "beta": vectors,
    "steps": st.one_of(
        st.lists(st.tuples(st.sampled_from(["A", "B", "1"]), numbers), max_size=3),
        st.integers(0, 4),
    ),
    "substep": st.sampled_from(["exact", "euler", "heun", "nope"]),
    "parameters": st.dictionaries(
        st.sampled_from(["g", "a", "x"]),
        st.one_of(
            st.sampled_from(["gate", "learned", "tanh", "softmax", "nope"]),
            st.fixed_dictionaries(
                {"kind": st.sampled_from(["gate", "learned", "softmax"])},
                optional={"init": numbers},
            ),
            toml_values,
        ),
        max_size=2,
    ),
    "operators": st.lists(st.sampled_from(["A", "B"]), max_size=2),
    "method": st.sampled_from(["dopri5", "heun", "rk4", "nope"]),
    "grid": st.sampled_from(["interval", "positions"]),
    "time": st.sampled_from(["none", "concat", "embedding"]),
    "t0": numbers,
    "t1": numbers,
    "delta": numbers,
}


def declaration_dicts(family: object) -> st.SearchStrategy[dict]:
    keys = [k for k in catalog_files.COMMON_KEYS if k != "family"]
    cls = catalog_files.BY_FAMILY.get(family) if isinstance(family, str) else None
    keys += cls.keys if cls is not None else ()
    optional = {
        key: st.one_of(PLAUSIBLE[key], toml_values) if key in PLAUSIBLE else toml_values
        for key in keys
    }
    valid_keys = st.fixed_dictionaries({"family": st.just(family)}, optional=optional)
    typo = st.sampled_from(["ordr", "source", "Name"])  # keys valid in no family
    with_typo = st.tuples(valid_keys, typo, toml_values).map(lambda d: {**d[0], d[1]: d[2]})
    return st.integers(0, 4).flatmap(lambda i: with_typo if i == 0 else valid_keys)


families = st.integers(0, 5).flatmap(
    lambda i: st.sampled_from(FAMILIES) if i else st.one_of(toml_values, st.just("rk"))
)
declarations = families.flatmap(declaration_dicts)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=declarations, from_file=st.booleans())
def test_random_toml_dicts_raise_only_declaration_errors(isolated_catalog, data, from_file):
    source = "random.toml" if from_file else None
    try:
        method = from_dict(data, source=source)
    except bf.DeclarationError as error:
        assert error.key or error.source, f"the error names neither key nor file: {error}"
        if from_file:
            assert error.source == "random.toml"
    else:
        assert isinstance(method, bf.Method)
        assert method.family == data["family"]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=60))
def test_random_files_raise_only_declaration_errors(tmp_path_factory, text) -> None:
    path = Path(tmp_path_factory.mktemp("random")) / "random.toml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        bf.load(path)
    except bf.DeclarationError as error:
        assert str(path) in str(error)
