"""Section 4 on one lent GPU, as one time-boxed, resumable command.

    PYTHONPATH=. python3 scripts/gpu_section4.py --out "$OUT" --budget 560 --commit <HEAD> [--images PACK]

Runs the tasks below in order of priority while the time left allows (each task's cost is
estimated from the meta-iterations already timed in this call), and after every task writes
what it has to at most 8 files under ``--out`` (the device tool's limit):

* ``ica``: the positive control, FastICA with a complete basis at the paper's D (600), on
  200,000 patches, run to convergence (``ica.pt``);
* ``abl-paper-s<k>``: the layer-1 ablation at the paper's sizes, optimiser {cg, lbfgs, adam} x
  data schedule {main, fresh}, seed k (``ablation-paper.pt``; the (cg, main) cell is the
  ``paper`` configuration and its run continues to layers 2-4 in ``full-<seed>``);
* ``d2-s<k>``: Supp. D.2 as the authors ran it, 100 first-layer units, CNCE / NCE with c
  carried / NCE with c reset to 0 (``d2.pt``);
* ``demo-s<k>``: the same ablation grid at ``demo`` sizes (``ablation-demo.pt``);
* ``full-s<k>``: layers 2-4 of the ``paper`` run of seed k (``full.tar``);
* ``photos``: the ``paper`` recipe's layer 1 on the photo pack (``photos.pt``).

Working state lives in ``--work`` (default ``/root/cnce-work``), so a second call on the same
warm machine resumes every unfinished run. ``--bases smoke smoke`` is the CPU test.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tarfile
import time
import traceback
from pathlib import Path

import torch

from cnce import provenance
from cnce.images import measures
from cnce.images.configs import OPTIMIZERS, SCHEDULES, ablation_config, get_config
from cnce.images.probes import fastica
from cnce.images.train import _seed, make_source, train, train_comparison

CELLS = [("cg", "main"), ("lbfgs", "main"), ("cg", "fresh"), ("lbfgs", "fresh"), ("adam", "fresh"), ("adam", "main")]
assert {c for c in CELLS} == {(o, s) for o in OPTIMIZERS for s in SCHEDULES}


class Box:
    def __init__(self, budget: float, log):
        self.t0, self.budget, self.log = time.time(), budget, log
        self.per_meta: dict[tuple, float] = {}  # (size, optimizer, K1) -> seconds per meta-iteration

    def left(self) -> float:
        return self.budget - (time.time() - self.t0)

    def estimate(self, key, metas: int, default: float) -> float:
        return self.per_meta.get(key, default) * metas


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default="/root/cnce-work")
    ap.add_argument("--budget", type=float, default=560)
    ap.add_argument("--commit", default=None, help="the commit this tree is (recorded in every run)")
    ap.add_argument("--images", default=None, help="photo pack for the 'photos' task")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--bases", nargs=2, default=["paper", "demo-authors"], help="paper-size and demo-size base configs")
    ap.add_argument("--tasks", default=None, help="comma-separated task names (default: all, in priority order)")
    ap.add_argument("--ica-n", type=int, default=200_000)
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args(argv)
    out, work = Path(args.out), Path(args.work)
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    logf = open(out / "log.txt", "a")

    def log(*a):
        msg = time.strftime("%H:%M:%S ") + " ".join(str(x) for x in a)
        print(msg, flush=True)
        logf.write(msg + "\n")
        logf.flush()

    box = Box(args.budget, log)
    dev = args.device
    paper_base, demo_base = args.bases
    sources: dict = {}
    results_path = work / "results.json"
    results = json.loads(results_path.read_text()) if results_path.is_file() else {"runs": {}, "tasks_done": [], "calls": []}
    results["calls"].append(dict(started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), commit=args.commit,
                                 source_hash=provenance.package_source_hash(exclude=()),
                                 gpu=torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
                                 torch=torch.__version__, budget=args.budget))
    monitor = measures.Layer1Monitor()

    def source_for(cfg, seed, images=None):
        key = (images, cfg.patch, cfg.D, cfg.n_whiten, seed)
        if key not in sources:
            src, _ = make_source(images, patch=cfg.patch)
            src.fit_whitener(cfg.n_whiten, cfg.D, _seed(seed, 0, 0, 99), device=dev)
            sources[key] = src
        return sources[key]

    def run_dir(size, cell, seed, tag=""):
        if size == "paper" and cell == ("cg", "main") and not tag:
            return work / "full" / f"{paper_base}-seed{seed}"  # continued to layers 2-4 by t_full
        return work / "abl" / f"{size}{tag}" / f"{cell[0]}-{cell[1]}-seed{seed}"

    def cell_config(size, cell):
        return ablation_config(paper_base if size == "paper" else demo_base, *cell)

    def timed_train(key, cfg, **kw):
        t = time.time()
        st = train(cfg, device=dev, progress=False, monitor=monitor, code_commit=args.commit, **kw)
        h = st["history"]["1"]
        done = [r["seconds"] for r in h]
        if done:
            box.per_meta[key] = sum(done) / len(done)
        log(f"  trained {cfg.name} seed {kw.get('seed')} in {time.time() - t:.1f} s; "
            f"oriented {h[-1].get('oriented', float('nan')):.3f}, loss {h[-1]['loss']:.4f}, eps {h[-1]['eps']:.3f}")
        return st

    def record(name, st, layer="1"):
        results["runs"][name] = dict(config=st["config"], seed=st["seed"], method=st["method"],
                                     history={k: [{kk: vv for kk, vv in r.items() if kk != "eps_trace"} for r in v]
                                              for k, v in st["history"].items()},
                                     eps_traces={k: [r.get("eps_trace") for r in v] for k, v in st["history"].items()},
                                     sessions=st.get("sessions", []), seconds=st["seconds"], nce_c=st.get("nce_c"))

    # ------------------------------------------------------------------ tasks
    def t_ica():
        cfg = get_config(paper_base)
        src = source_for(cfg, 0)
        U = src.draw(args.ica_n, _seed(0, 0, 0, 77), dev).double()
        info: dict = {}
        t = time.time()
        W = fastica(U, cfg.D, iters=2000, tol=1e-6, seed=0, info=info)
        info["seconds"] = time.time() - t
        log("  fastica", info)
        torch.save(dict(W=W.cpu(), info=info, whitener=src.whitener.state_dict(), config=cfg.to_dict(), seed=0,
                        commit=args.commit), work / "ica.pt")
        results["ica"] = info

    def t_ablation(size, seed, cells=CELLS):
        def go():
            for cell in cells:
                cfg = cell_config(size, cell)
                key = (size, cell[0], cfg.K1)
                default = {"cg": 1.8, "lbfgs": 0.9, "adam": 2.5}[cell[0]] * (1 if size == "paper" else 0.3)
                need = box.estimate(key, cfg.meta_iters[0], default)
                if need > box.left() - 20:
                    log(f"  skip {size} {cell} seed {seed}: needs ~{need:.0f} s, {box.left():.0f} s left")
                    raise TimeoutError
                st = timed_train(key, cfg, out=run_dir(size, cell, seed), layers=(1,), seed=seed,
                                 source=source_for(cfg, seed))
                record(f"{size}/{cell[0]}-{cell[1]}/seed{seed}", st)
        return go

    def t_full(seed):
        def go():
            cfg = get_config(paper_base)
            need = box.estimate((paper_base, "L234"), 1, 60.0)
            if need > box.left() - 20:
                raise TimeoutError
            t = time.time()
            st = train(cfg, out=run_dir("paper", ("cg", "main"), seed), layers=(1, 2, 3, 4), seed=seed, device=dev,
                       progress=False, monitor=monitor, code_commit=args.commit, source=source_for(cfg, seed))
            box.per_meta[(paper_base, "L234")] = time.time() - t
            record(f"full/paper/seed{seed}", st)
            log(f"  layers 2-4 of paper seed {seed} in {time.time() - t:.1f} s")
        return go

    def t_d2(seed):
        def go():
            cfg = get_config(paper_base)
            cmp_cfg = cfg.for_comparison()
            need = 3 * box.estimate(("d2", cfg.name), cmp_cfg.meta_iters[0], 0.8)
            if need > box.left() - 20:
                raise TimeoutError
            t = time.time()
            res = train_comparison(cfg, out=work / "d2", work=work / "d2-runs", seed=seed, device=dev, progress=False,
                                   variants=("cnce", "nce-reset", "nce"), monitor=monitor, code_commit=args.commit)
            n = sum(len(h) for h in res["history"].values())
            box.per_meta[("d2", cfg.name)] = (time.time() - t) / max(n, 1)
            for v, h in res["history"].items():
                results["runs"][f"d2/{v}/seed{seed}"] = dict(history={"1": [{k: x for k, x in r.items() if k != "eps_trace"} for r in h]},
                                                             seed=seed, config=res["config"])
            log(f"  D.2 seed {seed} in {time.time() - t:.1f} s:",
                {v: round(h[-1].get("oriented", float("nan")), 3) for v, h in res["history"].items()})
        return go

    def t_photos():
        if not args.images or not Path(args.images).exists():
            log("  no photo pack given")
            return
        cfg = get_config(paper_base)
        need = box.estimate(("paper", "cg", cfg.K1), cfg.meta_iters[0], 1.8)
        if need > box.left() - 20:
            raise TimeoutError
        st = timed_train(("paper", "cg", cfg.K1), cfg, out=work / "photos" / "paper-seed0", layers=(1,), seed=0,
                         source=source_for(cfg, 0, images=args.images))
        record("photos/paper/seed0", st)

    tasks = [("ica", t_ica), ("abl-paper-s0", t_ablation("paper", 0)), ("d2-s0", t_d2(0)), ("full-s0", t_full(0))]
    tasks += [(f"demo-s{k}", t_ablation("demo", k)) for k in range(args.seeds)]
    tasks += [(f"d2-s{k}", t_d2(k)) for k in range(1, args.seeds)]
    for k in range(1, args.seeds):
        tasks += [(f"abl-paper-s{k}-cg-main", t_ablation("paper", k, [("cg", "main")])), (f"full-s{k}", t_full(k)),
                  (f"abl-paper-s{k}-rest", t_ablation("paper", k, CELLS[1:]))]
    tasks += [("photos", t_photos)]
    if args.tasks:
        want = args.tasks.split(",")
        tasks = [t for t in tasks if t[0] in want]

    for name, fn in tasks:
        if name in results["tasks_done"]:
            continue
        if box.left() < 25:
            log(f"out of time before {name}")
            break
        log(f"task {name} ({box.left():.0f} s left)")
        try:
            fn()
            results["tasks_done"].append(name)
        except TimeoutError:
            log(f"  {name} left for a later call")
        except Exception:  # keep going: one failed task must not lose the others
            log(f"  {name} FAILED\n" + traceback.format_exc())
        provenance.atomic_write_text(results_path, json.dumps(results, indent=1) + "\n")
        pack(work, out, log)
    log(f"done; {box.left():.0f} s of the budget left; tasks done: {results['tasks_done']}")
    return 0


def _w1_table(work: Path, sub: str) -> dict:
    """Final W1 (float16) and whitener of every run under ``work/abl/<sub>`` and ``work/full``."""
    out = {"W1": {}, "whitener": {}}
    dirs = list((work / "abl" / sub).glob("*-seed*")) if (work / "abl" / sub).is_dir() else []
    if sub == "paper":
        dirs += list((work / "full").glob("*-seed*")) if (work / "full").is_dir() else []
    for d in dirs:
        p = d / "state.pt"
        if not p.is_file():
            continue
        st = torch.load(p, map_location="cpu", weights_only=False)
        seed = st["seed"]
        if len(st["history"].get("1", [])) < st["config"]["meta_iters"][0]:
            continue
        out["W1"][f"{st['config']['name']}/seed{seed}"] = st["network"]["W1"].half()
        if seed == 0:  # the whitener of a seed is the same for every cell (same PCA draw)
            out["whitener"].setdefault(f"D{st['config']['D']}/seed{seed}", st["whitener"])
    return out


def pack(work: Path, out: Path, log) -> None:
    """Everything worth keeping, in at most 8 files under ``out``."""
    try:
        if (work / "results.json").is_file():
            provenance.atomic_write_text(out / "results.json", (work / "results.json").read_text())
        for sub in ("paper", "demo"):
            t = _w1_table(work, sub)
            if t["W1"]:
                provenance.atomic_torch_save(t, out / f"ablation-{sub}.pt")
        if (work / "ica.pt").is_file():
            provenance.atomic_torch_save(torch.load(work / "ica.pt", weights_only=False), out / "ica.pt")
        d2 = {}
        for f in sorted((work / "d2").glob("compare*.pt")) if (work / "d2").is_dir() else []:
            c = torch.load(f, map_location="cpu", weights_only=False)
            if c["seed"] != 0:
                c.pop("snapshots", None)  # the pictures of seed 0 are enough; histories for every seed
            d2[f.name] = c
        if d2:
            provenance.atomic_torch_save(d2, out / "d2.pt")
        full = sorted((work / "full").glob("*-seed*")) if (work / "full").is_dir() else []
        done = []
        for d in full:
            st = torch.load(d / "state.pt", map_location="cpu", weights_only=False)
            if all(len(st["history"].get(str(L), [])) >= n for L, n in zip((1, 2, 3, 4), st["config"]["meta_iters"])):
                done.append(d)
        if done:
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w") as tar:
                for d in done:
                    for f in ("state.pt", "provenance.json"):
                        if (d / f).is_file():
                            tar.add(d / f, arcname=f"{d.name}/{f}")
            provenance.atomic_write(out / "full.tar", lambda fh: fh.write(buf.getvalue()), binary=True)
        ph = work / "photos" / "paper-seed0" / "state.pt"
        if ph.is_file():
            st = torch.load(ph, map_location="cpu", weights_only=False)
            provenance.atomic_torch_save(dict(W1=st["network"]["W1"].half(), whitener=st["whitener"],
                                              history=st["history"], config=st["config"], data=st["data"],
                                              sessions=st.get("sessions")), out / "photos.pt")
        sizes = {p.name: round(p.stat().st_size / 2**20, 2) for p in out.iterdir()}
        log("  packed (MiB):", sizes)
    except Exception:
        log("  pack FAILED\n" + traceback.format_exc())


if __name__ == "__main__":
    sys.exit(main())
