"""``python -m companion <command>``: the workshop's commands.

* ``claims``: compute every declared claim from the committed results and weights and write
  the ledger, ``data/claims/ledger.json`` (:mod:`companion.claims.ledger`); ``--check`` only
  says whether the ledger matches the declarations, the code and the inputs (exit 1 if not);
  ``--list`` prints the ledger's rows.

A new command is a function ``add_<name>(subparsers)`` that adds its subparser and sets
``func`` (see :func:`add_claims`); list it in :data:`COMMANDS`.
"""
from __future__ import annotations

import argparse
import sys


def _claims(args) -> int:
    from companion.claims import ledger, tally

    if args.check:
        why = ledger.stale()
        for w in why:
            print(f"the ledger is stale: {w}; rewrite it with python -m companion claims", file=sys.stderr)
        return 1 if why else 0
    if not args.list:
        path = ledger.write(ctx=ledger.Context(seed=args.seed, n_boot=args.n_boot))
        print(f"wrote {path}")
    rows = ledger.records()
    for i, r in enumerate(rows, start=1):
        print(f"{i:>2} {r['id']:<28} {r['kind']:<6} {r['record']['verdict']:<18} {r['record']['short']}")
    t = tally([{"id": r["id"], "kind": r["kind"], "verdict": r["record"]["verdict"]} for r in rows])
    print(f"{sum(map(len, t['paper'].values()))} claims of the paper: "
          + ", ".join(f"{v} {len(ids)}" for v, ids in t["paper"].items()) + f"; {len(t['ours'])} questions of ours")
    pv = ledger.load()["provenance"]
    print(f"provenance: commit {pv['git_commit']}, dirty {pv['dirty']}")
    return 0


def add_claims(sub) -> None:
    p = sub.add_parser("claims", help="compute the claims ledger (data/claims/ledger.json)")
    p.add_argument("--check", action="store_true", help="only check that the ledger is up to date (exit 1 if not)")
    p.add_argument("--list", action="store_true", help="print the ledger's rows without recomputing")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstraps and generated checks (default 0)")
    p.add_argument("--n-boot", type=int, default=2000, help="bootstrap replicates (default 2000)")
    p.set_defaults(func=_claims)


#: the commands' adders, in the order ``--help`` lists them
COMMANDS = [add_claims]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m companion", description="the cnce companion's commands")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in COMMANDS:
        add(sub)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
