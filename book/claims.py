# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # The paper's claims, checked
#
# One row per claim and model: what we measure (click it for the paper's statement, in our
# words, and every number with its 95 % interval), the verdict by a fixed rule, and the page
# with the evidence ([the paper](https://proceedings.mlr.press/v80/ceylan18a/ceylan18a.pdf);
# how the table is computed and what each verdict means: {ref}`below the table <claims-method>`).

# %% tags=["parameters"]
seed = 0

# %% tags=["hide-input"]
import html

from IPython.display import HTML
from myst_nb import glue

from cnce.experiments import claims
from cnce.report import badge_html

results, runs = claims.committed_results(seed)
# the score-matching limit is computed, not read from a results table: the theory page's
# check at the book's (quick) size, N = 1000, same seed, same function
sm_row = claims.score_matching_row(claims.score_matching_limit(N=1000, seed=seed))
# the image model's rows: the image page's function, from the committed runs and claim measures
from cnce.images import claims as image_claims

image_rows = image_claims.chapter_rows(seed=seed)
table = claims.claims_table(results, n_boot=2000, seed=seed, extra_rows=[sm_row, *(r.table_row() for r in image_rows)])
tally = claims.tally_html(table, href="claims.html")
glue("tally", HTML(tally), display=False)  # the introduction shows it too

def html_rows(rows):
    """The table rows of ``(number, row)`` pairs; each row's id is its number, which the tally links."""
    return "".join(
        f'<tr id="claim-{i}"><td>{i}</td><td><b>{html.escape(r.claim)}</b></td>'
        f"<td><details><summary>{html.escape(r.short)}</summary><div><b>The paper:</b> {html.escape(r.paper)}."
        f"<br><b>Measured</b>: {html.escape(r.measured)}</div></details></td>"
        f"<td>{badge_html(r.verdict)}</td><td><a href=\"../notebooks/{r.page}.html\">{claims.PAGE_TITLES[r.page]}</a></td></tr>"
        for i, r in rows)


numbered = list(enumerate(table.itertuples(), start=1))
head = ("<table class=\"claims\"><thead><tr><th>#</th><th>claim</th><th>we measure (click: the paper's claim, all "
        "numbers)</th><th>verdict</th><th>page</th></tr></thead><tbody>")
# the image model's rows in a table of their own under the synthetic ones, numbered on
image = [(i, r) for i, r in numbered if r.page == image_claims.PAGE]
HTML(f"<p>{tally}</p>{head}{html_rows([(i, r) for i, r in numbered if r.page != image_claims.PAGE])}</tbody></table>"
     f"<p><b>The neural image model</b> (Section 4 and Supp. D.2; {len(image)} rows):</p>"
     f"{head}{html_rows(image)}</tbody></table>")

# %% [markdown]
# (claims-method)=
# ## How the table is computed
#
# The synthetic rows are computed above from the committed paper-scale results in
# `data/results/paper/` (100 simulations per point), by `cnce.experiments.claims`; the
# score-matching limit is the theory page's check, recomputed by the same function; the image
# model's rows come from the image page's own function (`cnce.images.claims.chapter_rows`, from
# the committed runs and the claim measures in `data/checks/image-claims.json`).
# Errors are compared through $\log_{10}$ of median squared errors (a difference of 1, one
# {term}`decade`, is a factor of 10). The interval after each number is a 95 % bootstrap interval: the simulations
# are resampled with replacement, 2000 times, and since the methods, sample sizes and
# $\kappa$ of a study share each simulation's data and noise, one draw is applied to all of
# them (paired comparisons). Verdicts follow fixed rules, stated in the docstring of
# `cnce.experiments.claims.claims_table` and tested on tables whose answer is known
# (`tests/test_claims.py`). For example, "reproduced" for a consistency claim needs the
# interval of every slope below zero (the error falls as $N$ grows); whether the slope is
# the $1/N$ rate's $-1$ is reported beside it, not required. The image model's rules are in
# `cnce.images.claims` and `cnce.images.layer_claims` (each measure beside its baselines, with
# a known-answer test).

# %% tags=["hide-input"]
print(f"{len(table)} rows from {len(results)} studies, the score-matching check and {len(image_rows)} image-model rows; "
      "runs by commit: " + "; ".join(runs))

# %% [markdown]
# ## The neural image model
#
# The image model's rows above (Section 4 and Supp. D.2) come from runs at the paper's sizes
# on a GPU (the calls and their costs: {doc}`costs`) with the authors' recipe (their minimiser
# and {term}`main set` schedule), on
# photographs that are not the paper's ({doc}`image-data`): layer 1 on the seven photographs
# bundled with scikit-image, layers 2-4 on the Debian photo pack, whose first layer spans the
# frequencies that the frequency claims need ({doc}`differences`). Each layer's measure stands
# beside its baselines on {doc}`../notebooks/06_image_model`, whose first screen gives the
# verdicts layer by layer, and every unit is drawn on {doc}`../notebooks/06a_image_appendix`.
#
# ## How to read the verdicts
#
# * <span class="cnce-badge cnce-badge-reproduced">reproduced</span> our measurement supports
#   the claim, with its interval on the claim's side.
# * <span class="cnce-badge cnce-badge-partly">partly reproduced</span> the direction agrees but
#   the size does not (for example a smaller gap than the paper's), or the claim holds only
#   under one of two data generators.
# * <span class="cnce-badge cnce-badge-not-reproduced">not reproduced</span> our measurement
#   contradicts the claim, or does not show the effect.
# * <span class="cnce-badge cnce-badge-not-testable">not testable here</span> the run cannot
#   show it (for the Bernoulli model the heuristic mostly picks $\varepsilon = 1$, where CNCE
#   gives the maximum-likelihood estimate, so neither consistency nor the approach to MLE can
#   be seen there; the fixed-$\varepsilon$ run tests both claims instead).
# * <span class="cnce-badge cnce-badge-beyond">beyond the paper</span> a question of ours that
#   the paper does not ask (how good the $\varepsilon$ heuristic's choice is): the row reports
#   what we measure, with no verdict, since a claim the paper does not make cannot be
#   reproduced.
#
# Where our setting differs from the paper's (optimiser, error measure, data), the pages and
# {doc}`differences` say how; a different result is reported as it is, with the reasons we can
# give on the page that shows it.
