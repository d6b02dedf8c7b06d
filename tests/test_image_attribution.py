"""Known-answer tests of the image chapter's attributions (cnce.images.attribution)."""
import pytest

from cnce.images import attribution as A
from cnce.images.verdicts import Measured


def _results(s50, s400):
    rec = lambda o: [{"oriented": 0.0, "loss_unseen": 1.3}, {"oriented": o, "loss_unseen": 1.0}]  # noqa: E731
    runs = {f"pca/50k/s{k}": {"history": {"1": rec(o)}} for k, o in enumerate(s50)}
    runs.update({f"pca/400k/s{k}": {"history": {"1": rec(o)}} for k, o in enumerate(s400)})
    return {"runs": runs}


@pytest.mark.parametrize("s50,s400,word", [((0.02, 0.03), (0.3, 0.4), "reproduced"),
                                           ((0.02, 0.20), (0.3, 0.4), "not reproduced"),
                                           ((0.02, 0.03), (0.04, 0.4), "not testable here")])
def test_pca_test_verdicts_on_known_answers(s50, s400, word):
    m = A.pca_test(_results(s50, s400))
    head = m.verdict.split(":")[0]
    assert head.startswith(word) and "meta-iterations and 2 seeds per arm that ran" in m.verdict  # limited to what ran
    assert m.interval == (min(s50), max(s50)) and m.rule == "range of 2 seeds"


def test_pca_test_on_the_committed_runs():
    m = A.pca_test()
    assert m.n_seeds == 2 and m.extra["meta_iterations"] == 20 and m.verdict.startswith("reproduced")


def test_layer3_input_table_places_each_group():
    m = Measured(claim="c", measure="m", value=0.5, interval=(0.4, 0.6), verdict="supported: x")
    nt = Measured(claim="c", measure="m", value=float("nan"), verdict="not testable here: y", not_testable="y")
    t = A.layer3_input_table({"layer3_contours": m, "photos/layer3_contours": nt}, keys=("layer3_contours",))
    assert t.loc["c", ("bundled photographs", "earlier (ensemble)")] == "0.50 [0.40, 0.60]; supported"
    assert t.loc["c", ("photo pack", "authors' (per sample)")] == "not testable"
    assert t.loc["c", ("photo pack", "earlier (ensemble)")] == "not measured"
