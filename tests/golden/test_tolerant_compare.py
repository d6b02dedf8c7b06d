"""The golden notebooks' number-tolerant text comparison (tolerant_compare.py) on outputs whose
verdict is known."""
from __future__ import annotations

import pytest

from tolerant_compare import DEFAULT, TOLERANCES, Tolerance, compare_outputs, compare_text, split_numbers, tolerance_for

GOLDEN = ("eps = 1e-07: (J_N - 2 log 2)/eps^2 =   2.4424, pairs straddling a kink: 3\n"
          "largest |error| 2.9e-16 at N = 1000\n")


def test_split_numbers():
    pieces, numbers = split_numbers("N = 1000, eps -2.5e-3 and .5; nan inf, infinite L1")
    assert numbers == ["1000", "-2.5e-3", ".5", "nan", "inf", "1"]
    assert pieces[0] == "N = " and pieces[-1] == ""
    assert "infinite L" in pieces[-2]


def test_identical_and_round_off_pass():
    assert compare_text(GOLDEN, GOLDEN) == []
    fresh = GOLDEN.replace("2.9e-16", "2.9000000000001e-16")
    assert compare_text(GOLDEN, fresh) == []
    # below the absolute tolerance: two round-off levels that differ
    assert compare_text("diff 2.9e-16", "diff 3.9e-16") == []


def test_a_number_beyond_the_tolerance_fails_and_shows_both_values():
    fresh = GOLDEN.replace("2.4424", "2.4425")
    problems = compare_text(GOLDEN, fresh)
    assert len(problems) == 1
    assert "golden 2.4424, fresh 2.4425" in problems[0]
    assert "pairs straddling a kink" in problems[0]  # the golden line, for orientation
    # a looser tolerance for this cell accepts it
    assert compare_text(GOLDEN, fresh, Tolerance(rtol=1e-3, atol=0.0)) == []


def test_changed_words_missing_lines_and_extra_numbers_fail():
    assert compare_text(GOLDEN, GOLDEN.replace("largest", "smallest"))
    assert compare_text(GOLDEN, GOLDEN.splitlines(keepends=True)[0])
    assert compare_text(GOLDEN, GOLDEN + "one more line\n")
    assert compare_text(GOLDEN, GOLDEN.replace("at N = 1000", "at N = 1000 2000"))
    assert compare_text("x = 1", "x = -1")
    assert compare_text("value nan", "value 0.0")
    assert compare_text("value inf", "value -inf")
    assert compare_text("value nan", "value nan") == []


def test_column_padding_may_follow_number_widths():
    golden = "   kappa  error\n0      2   9.99\n"
    fresh = "   kappa   error\n0      2   10.00\n"
    assert compare_text(golden, fresh, Tolerance(rtol=0.01, atol=0.0)) == []
    # but a line break is not a blank
    assert compare_text("a 1 b", "a 1\nb")


def test_tolerance_table():
    assert tolerance_for("nowhere.ipynb", "print(1)") is DEFAULT
    for (nb, piece), tol in TOLERANCES.items():
        assert nb.endswith(".ipynb") and piece
        assert tol.reason, f"{nb}: a per-cell tolerance needs its reason"
        assert tolerance_for(nb, f"x = 1\n{piece}\n") is tol
        assert 0 <= tol.rtol < 1 and tol.atol >= 0


@pytest.mark.parametrize("text", ["", "no numbers at all", "1", "-0.0"])
def test_trivial_texts(text):
    assert compare_text(text, text) == []


def test_compare_outputs_as_nbval_compares():
    """stdout pieces merged, stderr left out; a moved number and a missing output fail."""
    golden = [{"output_type": "stream", "name": "stdout", "text": "loss 0.693147\n"},
              {"output_type": "stream", "name": "stderr", "text": "progress 10 it/s\n"}]
    same = [{"output_type": "stream", "name": "stdout", "text": "loss "},
            {"output_type": "stream", "name": "stdout", "text": "0.6931470001\n"}]
    moved = [{"output_type": "stream", "name": "stdout", "text": "loss 0.693247\n"}]
    table = [{"output_type": "execute_result", "data": {"text/plain": "a 1.5", "image/png": "AAAA"},
              "metadata": {}, "execution_count": 3}]
    ident = lambda s: s  # noqa: E731
    assert compare_outputs(golden, same, ident) == []
    assert compare_outputs(golden, moved, ident)
    assert compare_outputs(golden, [], ident)
    assert compare_outputs(table, [{**table[0], "data": {"text/plain": "a 1.5"}, "execution_count": 9}], ident) == []
    assert compare_outputs(table, [{**table[0], "data": {"text/plain": "a 2.5"}}], ident)
