"""The claims ledger (``companion.claims``): its format, every rule on constructed inputs that
give each verdict it can give, the tally, that the committed ledger is up to date, and that
every verdict a page shows is a ledger record."""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cnce.experiments.claims import Estimate
from companion import claims as C
from companion.claims import ledger, render
from companion.claims import synthetic as S

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"


def E(value, lo=None, hi=None):
    """An Estimate with the given point and interval (default: a narrow one around the point)."""
    lo = value - 0.01 if lo is None else lo
    hi = value + 0.01 if hi is None else hi
    return Estimate(value, (hi - lo) / 4, lo, hi)


# --- the format ----------------------------------------------------------------------------------

def _decl(**kw):
    base = dict(id="x-y", title="t", section="s", paper="p", kind=C.PAPER, rule="r", measure="m", data="d",
                baselines="", page="02_consistency", anchor="", code="cnce.experiments.claims.slope",
                compute=lambda ctx: C.Record(verdict="reproduced", short="s", measured="m"))
    return C.Claim(**{**base, **kw})


def test_a_declaration_is_validated():
    _decl()
    with pytest.raises(ValueError, match="id"):
        _decl(id="Bad Id")
    with pytest.raises(ValueError, match="kind"):
        _decl(kind="beyond")
    with pytest.raises(ValueError, match="page"):
        _decl(page="99_nowhere")
    with pytest.raises(ValueError, match="rule"):
        _decl(rule="")


def test_a_record_fits_its_claims_kind():
    paper, ours = _decl(), _decl(kind=C.OURS)
    with pytest.raises(ValueError, match="verdict must be one of"):
        C.Record(verdict="agrees", short="s", measured="m")
    with pytest.raises(ValueError, match="question of ours"):
        ours.check(C.Record(verdict="reproduced", short="s", measured="m"))
    with pytest.raises(ValueError, match="claim of the paper"):
        paper.check(C.Record(verdict=C.QUESTION, short="s", measured="m"))
    with pytest.raises(ValueError, match="why"):
        paper.check(C.Record(verdict="not reproduced", short="s", measured="m"))
    assert paper.check(C.Record(verdict="not reproduced", short="s", measured="m", why="w")).why == "w"


def test_declared_ids_are_unique_and_every_claim_names_a_page_section_that_exists():
    cs = C.claims()
    assert len({c.id for c in cs}) == len(cs) > 20
    for c in cs:
        if not c.anchor:
            continue
        src = (ROOT / "notebooks" / f"{c.page}.py").read_text()
        assert re.search(rf"^# #+ {re.escape(c.anchor)}\s*$", src, re.M), f"{c.id}: no heading {c.anchor!r} on {c.page}"
    again = {k: v for k, v in cs[0].as_dict().items() if k != "declared_in"}
    with pytest.raises(ValueError, match="declared twice"):
        C.declare(**again, compute=cs[0].compute)


# --- the rules, each verdict it can give -----------------------------------------------------------

def test_consistency_rule_tests_fall_rate_and_straightness():
    at_rate, straight = [E(-1.0), E(-1.02)], [E(0.0), E(0.05)]
    assert S.consistency_verdict(at_rate, straight)[0] == "reproduced"
    v, why = S.consistency_verdict([E(-0.5), E(-0.55)], straight)  # falls, too slowly
    assert v == "partly reproduced" and "1/N rate" in why
    v, why = S.consistency_verdict(at_rate, [E(0.6), E(0.0)])  # at the rate on average, but bent
    assert v == "partly reproduced" and "bend" in why
    assert S.consistency_verdict([E(-1.0), E(-0.01, -0.05, 0.03)], straight)[0] == "not reproduced"
    assert S.consistency_verdict(at_rate, straight, eps_one=0.95)[0] == "not testable here"
    # the tolerances decide at the margin, and the record reports the verdict at half and twice them
    assert S.consistency_verdict([E(-1.4)], [E(0.0)], rate_tol=0.5)[0] == "reproduced"


def test_approach_rule():
    assert S.approach_verdict(E(-0.5))[0] == "reproduced"
    assert S.approach_verdict(E(-0.05, -0.2, 0.1))[0] == "partly reproduced"
    assert S.approach_verdict(E(0.2))[0] == "not reproduced"
    assert S.approach_verdict(E(-0.5), eps_one=1.0)[0] == "not testable here"


def test_nce_ahead_rule():
    assert S.nce_ahead_verdict([E(-0.5), E(-0.2)])[0] == "reproduced"
    assert S.nce_ahead_verdict([E(-0.5), E(-0.05, -0.2, 0.1)])[0] == "partly reproduced"
    assert S.nce_ahead_verdict([E(-0.5), E(0.1)])[0] == "not reproduced"


def test_on_par_rule_can_say_not_reproduced_when_one_method_is_clearly_ahead():
    assert S.on_par_verdict([E(0.02), E(-0.03)])[0] == "reproduced"
    assert S.on_par_verdict([E(0.02), E(-0.08, -0.15, -0.01)])[0] == "partly reproduced"
    v, why = S.on_par_verdict([E(-0.35), E(-0.11, -0.13, -0.105)])
    assert v == "not reproduced" and why.startswith("NCE is ahead")


def test_gap_shrinks_rule_uses_the_interval():
    assert S.gap_shrinks_verdict(E(0.5, 0.4, 0.6))[0] == "reproduced"
    assert S.gap_shrinks_verdict(E(0.05, -0.05, 0.15))[0] == "partly reproduced"
    assert S.gap_shrinks_verdict(E(-0.1))[0] == "not reproduced"


def test_ring_rule_is_one_row_over_two_generators():
    order, better, no = E(1.0, 0.9, 1.1), E(0.5, 0.4, 0.6), E(-0.2)
    cls = S.ring_generator_class
    assert (cls(order), cls(better), cls(no)) == ("order", "better", "no")
    assert S.ring_verdict({"a": "order", "b": "order"})[0] == "reproduced"
    v, why = S.ring_verdict({"a": "order", "b": "no"})
    assert v == "partly reproduced" and "a: an order of magnitude" in why
    assert S.ring_verdict({"a": "better", "b": "better"})[0] == "partly reproduced"
    assert S.ring_verdict({"a": "no", "b": "no"})[0] == "not reproduced"


def test_local_minima_rule_can_reproduce_and_fail():
    S100 = 100
    assert S.stuck_verdict({"MLE": 12, "CNCE kappa 2": 8, "CNCE kappa 10": 6}, S100)[0] == "reproduced"
    assert S.stuck_verdict({"MLE": 0, "CNCE kappa 2": 0}, S100)[0] == "not reproduced"
    assert S.stuck_verdict({"MLE": 1, "CNCE kappa 2": 40}, S100)[0] == "not reproduced"  # none consistent
    assert S.stuck_verdict({"MLE": 13, "CNCE kappa 2": 40}, S100)[0] == "partly reproduced"


def test_score_matching_and_eps0_rules():
    assert S.sm_verdict(1e-5, 2.0)[0] == "reproduced"
    assert S.sm_verdict(1e-5, 1.0)[0] == "partly reproduced"
    assert S.sm_verdict(0.5, 2.0)[0] == "partly reproduced"
    assert S.sm_verdict(0.5, 1.0)[0] == "not reproduced"
    assert S.eps0_verdict(0.0)[0] == "reproduced" and S.eps0_verdict(1e-6)[0] == "not reproduced"


def test_score_matching_rule_on_the_real_check():
    """The theorem holds with moment-matched antithetic noise; with independent draws the ratio
    does not reach J_SM / 2 in a finite sample, and the same rule must say so."""
    from cnce.experiments.claims import score_matching_limit

    good = score_matching_limit(N=200, seed=0)
    bad = score_matching_limit(N=200, seed=0, noise="independent")
    assert S.sm_verdict(good["rel_dev"], good["slope"])[0] == "reproduced"
    assert S.sm_verdict(bad["rel_dev"], bad["slope"])[0] != "reproduced"


def test_parts_rule_every_verdict():
    from companion.claims.shapes import parts_verdict

    assert parts_verdict({"localised": "reproduced", "oriented": "reproduced", "band-pass": "reproduced"})[0] == "reproduced"
    v, why = parts_verdict({"localised": "reproduced", "oriented": "reproduced", "band-pass": "not reproduced"})
    assert v == "partly reproduced" and "band-pass" in why
    assert parts_verdict({"a": "not reproduced", "b": "not testable here"})[0] == "not reproduced"
    assert parts_verdict({"a": "not testable here"})[0] == "not testable here"
    with pytest.raises(ValueError, match="part"):
        parts_verdict({})


def test_existence_rule_every_verdict():
    from companion.claims.shapes import existence_verdict

    assert existence_verdict(3, 0.5, p_value=0.01)[0] == "reproduced"
    assert existence_verdict(3, 0.5, p_value=0.2)[0] == "partly reproduced"
    assert existence_verdict(1, 2.0)[0] == "partly reproduced"
    assert existence_verdict(0, 0.0)[0] == "not reproduced"
    assert existence_verdict(5, 0.0, testable=False, reason="control fails") == ("not testable here", "control fails")


# --- computing from constructed tables -------------------------------------------------------------

def _table(study, curves, Ns=(100, 300, 1000, 3000), S_=60, eps=0.5, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(S_)
    rows = [{"study": study, "method": m, "kappa": k, "N": N, "sim": s, "eps": eps if m == "cnce" else np.nan,
             "error": c / N * np.exp(0.3 * z[s])} for m, k, c in curves for N in Ns for s in range(S_)]
    d = pd.DataFrame(rows)
    d["kappa"] = d["kappa"].astype("Int64")
    return d


def test_records_from_constructed_tables():
    """CNCE like 1/N and closing on MLE with kappa, NCE 10x worse than CNCE on the Gaussian
    model: consistency and the approach to MLE reproduced, NCE ahead not reproduced; a Bernoulli
    run at eps = 1 is decided by the fixed-eps run, counted once."""
    g = _table("gaussian", (("cnce", 2, 4.0), ("cnce", 10, 2.0), ("nce", 2, 40.0), ("nce", 10, 20.0), ("mle", None, 1.0)))
    b = _table("bernoulli", (("cnce", 2, 1.0), ("cnce", 10, 1.0), ("mle", None, 1.0)), eps=1.0)
    b2 = _table("bernoulli-eps0.2", (("cnce", 2, 3.0), ("cnce", 10, 1.5), ("mle", None, 1.0)), eps=0.2)
    ctx = ledger.Context(n_boot=300, results={"gaussian": g, "bernoulli": b, "bernoulli-eps0.2": b2})
    recs = {c.id: r for c, r in ledger.compute(ctx, only={"consistency-gaussian", "approach-mle-gaussian",
                                                          "nce-vs-cnce-gaussian", "consistency-bernoulli",
                                                          "approach-mle-bernoulli", "consistency-ica"})}
    assert recs["consistency-gaussian"].verdict == "reproduced"
    assert recs["approach-mle-gaussian"].verdict == "reproduced"
    assert recs["nce-vs-cnce-gaussian"].verdict == "not reproduced" and recs["nce-vs-cnce-gaussian"].why
    assert recs["consistency-bernoulli"].verdict == "reproduced"
    assert "not testable at the heuristic's eps" in recs["consistency-bernoulli"].short
    assert recs["approach-mle-bernoulli"].numbers["heuristic_verdict"] == "not testable here"
    assert recs["consistency-ica"].verdict == "not testable here"  # no table: said, not hidden


# --- the tally -------------------------------------------------------------------------------------

def test_tally_counts_the_papers_claims_and_our_questions_apart():
    rows = [{"id": "a", "kind": C.PAPER, "verdict": "reproduced"}, {"id": "b", "kind": C.PAPER, "verdict": "not reproduced"},
            {"id": "c", "kind": C.OURS, "verdict": C.QUESTION}, {"id": "d", "kind": C.PAPER, "verdict": "reproduced"}]
    t = C.tally(rows)
    assert t[C.PAPER] == {"reproduced": ["a", "d"], "partly reproduced": [], "not reproduced": ["b"], "not testable here": []}
    assert t[C.OURS] == ["c"]
    with pytest.raises(ValueError, match="not one of"):
        C.tally([{"id": "e", "kind": C.PAPER, "verdict": C.QUESTION}])


def test_tally_line_of_the_committed_ledger():
    rows = ledger.records()
    line = render.tally_html(rows, href="claims.html")
    t = C.tally([{"id": r["id"], "kind": r["kind"], "verdict": r["record"]["verdict"]} for r in rows])
    n_paper = sum(len(v) for v in t[C.PAPER].values())
    assert n_paper + len(t[C.OURS]) == len(rows)
    assert f"{n_paper} claims of the paper" in line and f"{len(t[C.OURS])} questions of ours" in line
    for r in rows:
        assert f'href="claims.html#claim-{r["id"]}"' in line


# --- the committed ledger --------------------------------------------------------------------------

def test_the_ledger_is_up_to_date_and_from_a_clean_commit():
    """The declarations, the claims code and the inputs are those the ledger was computed from
    (``python -m companion claims`` rewrites it), and it was written from a clean tree."""
    assert ledger.stale() == [], "rewrite the ledger: python -m companion claims"
    pv = ledger.load()["provenance"]
    assert pv["git_commit"] and pv["dirty"] is False, f"the ledger was written from a dirty tree: {pv}"


def test_no_row_measures_one_verdict_and_shows_another():
    """A row's "measured" text may not open with a verdict word other than the row's own (the
    layer-3 row once read "partly reproduced" beside "not reproduced under every testable
    setting", the settings table's share test, not the row's existence rule)."""
    words = ("not testable here", "partly reproduced", "not reproduced", "reproduced")
    for r in ledger.records():
        rec = r["record"]
        head = next((w for w in words if rec["measured"].lower().startswith(w)), None)
        assert head in (None, rec["verdict"]), (r["id"], rec["verdict"], rec["measured"][:80])


def test_existence_rows_measure_in_their_own_rules_words():
    from cnce.images.verdicts import Measured
    from companion.claims.images import existence_by_settings, existence_measured

    m = Measured(claim="c", measure="units", value=4 / 90, interval=(0.0, 0.09), verdict="not supported: 0.04 of units",
                 extra={"per_seed": [2 / 60, 2 / 60, 4 / 60], "p_per_seed": [0.34, 0.28, 0.015],
                        "null quantiles": {"random": [{"q95": 0.05}] * 3}})
    untestable = Measured(claim="c", measure="units", value=float("nan"), verdict="not testable", not_testable="control fails")
    by = {"probe A": m, "probe B": untestable}
    verdict = existence_by_settings(by, n_units=60)[0]
    text = existence_measured(by, 60)
    assert verdict == "partly reproduced" and not text.startswith("not reproduced")
    assert "2, 2, 4 of 60 units per seed" in text and "3.0, 3.0, 3.0 units" in text and "probe B: not testable here, control fails" in text
    assert "share test (interval against the nulls' means): not supported" in text


def test_the_ledgers_synthetic_records_recompute():
    """The cheap records (committed synthetic tables and the theory checks) recompute to what the
    ledger holds, verdict and numbers."""
    ids = {c.id for c in C.claims() if c.declared_in.endswith(".synthetic")}
    fresh = {c.id: r.as_dict() for c, r in ledger.compute(ledger.Context(), only=ids)}
    stored = {r["id"]: r["record"] for r in ledger.records() if r["id"] in ids}
    assert fresh == json.loads(json.dumps(stored))


# --- every verdict a page shows is a ledger record -------------------------------------------------

def _glued_verdicts(nb: Path) -> list[str]:
    out = []
    for cell in json.loads(nb.read_text())["cells"]:
        for o in cell.get("outputs", []):
            for k, v in o.get("data", {}).items():
                v = "".join(v) if isinstance(v, list) else v
                if k.endswith("text/markdown") and 'class="admonition cnce-verdict"' in v:
                    out.append(v)
    return out


RESULTS_PAGES = ("01_theory", "02_consistency", "03_cnce_vs_nce", "04_ring", "05_supplementary", "07_choosing_eps")


@pytest.mark.parametrize("page", RESULTS_PAGES)
def test_every_verdict_a_page_shows_is_a_ledger_record(page):
    """The verdict block glued by the page (its golden copy) holds one line per ledger claim of the
    page, each naming its ledger id, with the ledger's verdict and deciding number, and no other."""
    blocks = _glued_verdicts(GOLDEN / f"{page}.ipynb")
    assert len(blocks) == 1, f"{page}: {len(blocks)} verdict blocks"
    items = re.findall(r"<li([^>]*)>(.*?)</li>", blocks[0])
    ids = [re.search(r'data-claim="([^"]+)"', attrs) for attrs, _ in items]
    assert all(ids), f"{page}: a verdict line that names no ledger claim"
    rows = {r["id"]: r for r in ledger.records(page)}
    assert [m.group(1) for m in ids] == list(rows), f"{page}: the block's claims are not the ledger's"
    for (_, body), m in zip(items, ids):
        rec = rows[m.group(1)]["record"]
        assert f">{rec['verdict']}</span>" in body and html.escape(rec["short"]) in body
        if rec["verdict"] not in ("reproduced", C.QUESTION):
            assert html.escape(rec["why"]) in body, f"{page}: the block does not say why {m.group(1)} is {rec['verdict']}"


def test_a_verdict_block_names_only_ledger_claims():
    """Known answer: a block for an unknown claim id cannot be rendered."""
    with pytest.raises(ValueError, match="claim id must be one of"):
        render.verdict_block_html("02_consistency", "q?", ids=["not-a-claim"])
    with pytest.raises(ValueError, match="no claim shown on page"):
        render.verdict_block_html("00_quickstart", "q?")


def test_claims_table_links_each_row_to_its_page_section_and_code():
    rows = ledger.records()
    t = render.claims_table_html(rows)
    for r in rows:
        assert f'id="claim-{r["id"]}"' in t
        if r["anchor"]:
            assert f'notebooks/{r["page"]}.html#{render.anchor_id(r["anchor"])}"' in t
    for f in render.code_files(rows):
        assert (ROOT / f).is_file() and f'downloads/{f}"' in t
    not_repro = [r for r in rows if r["kind"] == C.PAPER and r["record"]["verdict"] != "reproduced"]
    assert not_repro and all(html.escape(r["record"]["why"]) in t for r in not_repro)


def test_the_command_checks_and_lists_the_ledger(capsys, tmp_path):
    from companion.cli import main

    assert main(["claims", "--check"]) == 0
    assert main(["claims", "--list"]) == 0
    out = capsys.readouterr().out
    assert "claims of the paper" in out and "questions of ours" in out
    stale = tmp_path / "ledger.json"
    doc = ledger.load()
    stale.write_text(json.dumps({**doc, "provenance": {**doc["provenance"], "code_hash": "0"}}))
    assert ledger.stale(stale) == ["the claims code changed"]
    with pytest.raises(SystemExit):
        main(["claims", "--n-boot", "many"])
