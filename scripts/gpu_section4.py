"""Section 4 on one lent GPU, as one time-boxed, resumable command.

    PYTHONPATH=. python3 scripts/gpu_section4.py --out "$OUT" --budget 540 --commit <HEAD> [--images PACK]

A queue of jobs, taken in order of priority by ``--workers`` processes that share the GPU
(the small and the Adam runs are bound by kernel launches, so several of them overlap well).
A worker claims a job (an exclusive file in ``<work>/claims``) when the time left covers the
job's estimate, and after each job every worker writes what there is to at most 8 files under
``--out`` (the device tool's limit):

* ``ica``: the positive control, FastICA with a complete basis at the paper's D (600) on
  200,000 patches, run to convergence -> ``ica.pt``;
* ``paper/<opt>-<schedule>/s<k>``: the layer-1 ablation at the paper's sizes, optimiser
  {cg, lbfgs, adam} x data schedule {main, fresh}, seed k -> ``ablation-paper.pt`` (final
  first-layer weights) and ``results.json`` (every meta-iteration's record); the (cg, main) cell
  is the ``paper`` configuration, and its job goes on to layers 2-4 -> ``full.tar``;
* ``demo/<opt>-<schedule>/s<k>``: the same grid at ``demo`` sizes -> ``ablation-demo.pt``;
* ``d2/s<k>``: Supp. D.2 as the authors ran it (100 first-layer units, their minimiser and main
  sets): CNCE, NCE with c carried over, NCE with c reset to 0 -> ``d2.pt``;
* ``photos``: the ``paper`` recipe's layer 1 on the photo pack -> ``photos.pt``.

Working state lives in ``--work`` (default ``/root/cnce-work``): a second call on the same warm
machine resumes every unfinished run and skips finished jobs. ``--bases smoke smoke --device
cpu`` is the CPU test.
"""
from __future__ import annotations

import argparse
import fcntl
import io
import json
import os
import subprocess
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

CELLS = [("cg", "main"), ("adam", "fresh"), ("adam", "main"), ("lbfgs", "main"), ("cg", "fresh"), ("lbfgs", "fresh")]
assert set(CELLS) == {(o, s) for o in OPTIMIZERS for s in SCHEDULES}
#: seconds per layer-1 meta-iteration on one H100, from earlier runs (paper L-BFGS 0.77 s,
#: paper Adam 2.3 s), with room for the diagnostics and for sharing the GPU
SEC_PER_META = {("paper", "cg"): 2.2, ("paper", "lbfgs"): 1.2, ("paper", "adam"): 3.0,
                ("demo", "cg"): 0.8, ("demo", "lbfgs"): 0.6, ("demo", "adam"): 0.9}


def jobs(args) -> list[tuple[str, float]]:
    """``(name, estimated seconds)`` in order of priority."""
    paper, demo = get_config(args.bases[0]), get_config(args.bases[1])
    out = [("ica", 40.0)]

    def cell(size, c, k):
        cfg = paper if size == "paper" else demo
        est = SEC_PER_META[(size, c[0])] * cfg.meta_iters[0] + (60.0 if (size, c) == ("paper", ("cg", "main")) else 0.0)
        return (f"{size}/{c[0]}-{c[1]}/s{k}", est)

    d2_est = 3 * 1.2 * paper.for_comparison().meta_iters[0]
    out += [cell("paper", c, 0) for c in CELLS]
    out += [cell("demo", c, 0) for c in CELLS]
    out += [("d2/s0", d2_est)]
    for k in range(1, args.seeds):
        out += [cell("demo", c, k) for c in CELLS] + [(f"d2/s{k}", d2_est)]
    out += [("photos", SEC_PER_META[("paper", "cg")] * paper.meta_iters[0])]
    for k in range(1, args.seeds):
        out += [cell("paper", c, k) for c in CELLS]
    return out


class Worker:
    def __init__(self, args, index: int):
        self.args, self.index = args, index
        self.work, self.out = Path(args.work), Path(args.out)
        self.t_end = args.t_end
        self.sources: dict = {}
        self.monitor = measures.Layer1Monitor()
        self.results = {"runs": {}, "jobs": {}}
        self.res_path = self.work / f"results-{index}.json"
        if self.res_path.is_file():
            self.results = json.loads(self.res_path.read_text())

    def log(self, *a):
        msg = time.strftime("%H:%M:%S ") + f"[w{self.index}] " + " ".join(str(x) for x in a)
        print(msg, flush=True)
        with open(self.out / "log.txt", "a") as fh:
            fh.write(msg + "\n")

    def left(self) -> float:
        return self.t_end - time.time()

    def source_for(self, cfg, seed, images=None):
        key = (images, cfg.patch, cfg.D, cfg.n_whiten, seed)
        if key not in self.sources:
            src, _ = make_source(images, patch=cfg.patch)
            src.fit_whitener(cfg.n_whiten, cfg.D, _seed(seed, 0, 0, 99), device=self.args.device)
            self.sources[key] = src
        return self.sources[key]

    def record(self, name, st):
        self.results["runs"][name] = dict(
            config=st["config"], seed=st["seed"], method=st["method"], seconds=st["seconds"], nce_c=st.get("nce_c"),
            history={k: [{kk: vv for kk, vv in r.items() if kk != "eps_trace"} for r in v] for k, v in st["history"].items()},
            eps_traces={k: [r.get("eps_trace") for r in v] for k, v in st["history"].items()},
            sessions=st.get("sessions", []), data=st.get("data"))

    def train(self, cfg, **kw):
        return train(cfg, device=self.args.device, progress=False, monitor=self.monitor, code_commit=self.args.commit, **kw)

    # ---------------------------------------------------------------- the jobs
    def run(self, name: str) -> None:
        a = self.args
        if name == "ica":
            cfg = get_config(a.bases[0])
            src = self.source_for(cfg, 0)
            U = src.draw(a.ica_n, _seed(0, 0, 0, 77), a.device).double()
            info: dict = {}
            t = time.time()
            W = fastica(U, cfg.D, iters=a.ica_iters, tol=1e-6, seed=0, info=info)
            info["seconds"] = time.time() - t
            self.log("  fastica", info)
            provenance.atomic_torch_save(dict(W=W.cpu(), info=info, whitener=src.whitener.state_dict(), config=cfg.to_dict(),
                                              seed=0, commit=a.commit), self.work / "ica.pt")
            return
        if name.startswith("d2/"):
            seed = int(name.split("/s")[1])
            cfg = get_config(a.bases[0])
            res = train_comparison(cfg, out=self.work / "d2", work=self.work / "d2-runs", seed=seed, device=a.device,
                                   progress=False, variants=("cnce", "nce-reset", "nce"), monitor=self.monitor,
                                   code_commit=a.commit)
            for v, h in res["history"].items():
                self.results["runs"][f"d2/{v}/s{seed}"] = dict(
                    seed=seed, config=res["config"], sessions=res.get("sessions"),
                    history={"1": [{k: x for k, x in r.items() if k != "eps_trace"} for r in h]})
            self.log(f"  D.2 seed {seed}:", {v: round(h[-1].get("oriented", float("nan")), 3) for v, h in res["history"].items()})
            return
        if name == "photos":
            if not a.images or not Path(a.images).exists():
                self.log("  no photo pack given")
                return
            cfg = get_config(a.bases[0])
            st = self.train(cfg, out=self.work / "photos" / "paper-seed0", layers=(1,), seed=0,
                            source=self.source_for(cfg, 0, images=a.images))
            self.record("photos/paper/s0", st)
            return
        size, cell, s = name.split("/")
        seed, opt, sched = int(s[1:]), *cell.split("-")
        cfg = ablation_config(a.bases[0] if size == "paper" else a.bases[1], opt, sched)
        full = size == "paper" and (opt, sched) == ("cg", "main")
        out = self.work / ("full" if full else f"abl/{size}") / (f"{cfg.name}-seed{seed}" if full else f"{opt}-{sched}-seed{seed}")
        st = self.train(cfg, out=out, layers=(1, 2, 3, 4) if full else (1,), seed=seed, source=self.source_for(cfg, seed))
        self.record(name, st)
        h = st["history"]["1"]
        self.log(f"  {name}: oriented {h[-1].get('oriented', float('nan')):.3f}, J {h[-1]['loss']:.4f} "
                 f"(train {h[-1]['train_loss']:.4f}, unseen {h[-1]['loss_unseen']:.4f}), eps {h[-1]['eps']:.3f}, "
                 f"{sum(r['seconds'] for r in h):.0f} s layer 1")

    def loop(self) -> None:
        claims = self.work / "claims"
        claims.mkdir(exist_ok=True)
        for name, est in jobs(self.args):
            if self.left() < 20:
                break
            tag = name.replace("/", "_")
            if (claims / f"{tag}.done").exists():
                continue
            if est > self.left() - 10:
                continue  # a later, smaller job may still fit
            try:
                fd = os.open(claims / f"{tag}.{self.args.call}", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                os.close(fd)
            except FileExistsError:
                continue
            self.log(f"job {name} (estimate {est:.0f} s, {self.left():.0f} s left)")
            t = time.time()
            try:
                self.run(name)
                (claims / f"{tag}.done").touch()
                self.results["jobs"][name] = dict(seconds=time.time() - t, estimate=est)
            except Exception:
                self.log(f"  {name} FAILED\n" + traceback.format_exc())
            provenance.atomic_write_text(self.res_path, json.dumps(self.results) + "\n")
            pack(self.work, self.out, self.log)


def _merged_results(work: Path) -> dict:
    merged = {"runs": {}, "jobs": {}, "calls": []}
    for p in sorted(work.glob("results-*.json")):
        r = json.loads(p.read_text())
        merged["runs"].update(r["runs"])
        merged["jobs"].update(r["jobs"])
    calls = work / "calls.json"
    if calls.is_file():
        merged["calls"] = json.loads(calls.read_text())
    return merged


def _w1_table(work: Path, size: str) -> dict:
    """Final W1 (float16) of every finished layer-1 run of ``size``, and the whitener of seed 0."""
    out = {"W1": {}, "whitener": {}}
    dirs = list((work / "abl" / size).glob("*-seed*")) if (work / "abl" / size).is_dir() else []
    if size == "paper" and (work / "full").is_dir():
        dirs += list((work / "full").glob("*-seed*"))
    for d in dirs:
        p = d / "state.pt"
        if not p.is_file():
            continue
        st = torch.load(p, map_location="cpu", weights_only=False)
        if len(st["history"].get("1", [])) < st["config"]["meta_iters"][0]:
            continue
        out["W1"][f"{st['config']['name']}/s{st['seed']}"] = st["network"]["W1"].half()
        if st["seed"] == 0:  # the same PCA draw for every cell of a seed
            out["whitener"].setdefault("s0", st["whitener"])
    return out


def pack(work: Path, out: Path, log) -> None:
    """Everything worth keeping, in at most 8 files under ``out`` (one worker at a time)."""
    with open(work / "pack.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            provenance.atomic_write_text(out / "results.json", json.dumps(_merged_results(work)) + "\n")
            for size in ("paper", "demo"):
                t = _w1_table(work, size)
                if t["W1"]:
                    provenance.atomic_torch_save(t, out / f"ablation-{size}.pt")
            if (work / "ica.pt").is_file():
                provenance.atomic_torch_save(torch.load(work / "ica.pt", weights_only=False), out / "ica.pt")
            d2 = {}
            for f in sorted((work / "d2").glob("compare*.pt")) if (work / "d2").is_dir() else []:
                c = torch.load(f, map_location="cpu", weights_only=False)
                if c["seed"] != 0:
                    c.pop("snapshots", None)  # pictures for seed 0; histories for every seed
                d2[f.name] = c
            if d2:
                provenance.atomic_torch_save(d2, out / "d2.pt")
            done = []
            for d in sorted((work / "full").glob("*-seed*")) if (work / "full").is_dir() else []:
                if not (d / "state.pt").is_file():
                    continue
                st = torch.load(d / "state.pt", map_location="cpu", weights_only=False)
                if all(len(st["history"].get(str(L), [])) >= n for L, n in zip((1, 2, 3, 4), st["config"]["meta_iters"])):
                    done.append(d)
            if done:
                buf = io.BytesIO()
                with tarfile.open(fileobj=buf, mode="w") as tar:
                    for d in done[:3]:
                        for f in ("state.pt", "provenance.json"):
                            if (d / f).is_file():
                                tar.add(d / f, arcname=f"{d.name}/{f}")
                provenance.atomic_write(out / "full.tar", lambda fh: fh.write(buf.getvalue()), binary=True)
            ph = work / "photos" / "paper-seed0" / "state.pt"
            if ph.is_file():
                st = torch.load(ph, map_location="cpu", weights_only=False)
                provenance.atomic_torch_save(dict(W1=st["network"]["W1"].half(), whitener=st["whitener"],
                                                  config=st["config"], data=st["data"]), out / "photos.pt")
            log("  packed (MiB):", {p.name: round(p.stat().st_size / 2**20, 2) for p in sorted(out.iterdir())})
        except Exception:
            log("  pack FAILED\n" + traceback.format_exc())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default="/root/cnce-work")
    ap.add_argument("--budget", type=float, default=540, help="seconds from now until no job may still be running")
    ap.add_argument("--commit", default=None, help="the commit this tree is (recorded in every run)")
    ap.add_argument("--images", default=None, help="photo pack for the 'photos' job")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--bases", nargs=2, default=["paper", "demo-authors"], help="paper-size and demo-size base configs")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--ica-n", type=int, default=200_000)
    ap.add_argument("--ica-iters", type=int, default=2000)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--t-end", type=float, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--call", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    work, out = Path(args.work), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    if args.worker is not None:
        torch.set_num_threads(2)
        Worker(args, args.worker).loop()
        return 0
    t_end = time.time() + args.budget
    call = time.strftime("%H%M%S")
    calls_path = work / "calls.json"
    calls = json.loads(calls_path.read_text()) if calls_path.is_file() else []
    calls.append(dict(started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), commit=args.commit,
                      source_hash=provenance.package_source_hash(exclude=()), torch=torch.__version__,
                      gpu=torch.cuda.get_device_name(0) if torch.cuda.is_available() else None, budget=args.budget,
                      workers=args.workers))
    provenance.atomic_write_text(calls_path, json.dumps(calls) + "\n")
    base = [sys.executable, os.path.abspath(__file__), "--out", str(out), "--work", str(work), "--device", args.device,
            "--bases", *args.bases, "--ica-n", str(args.ica_n), "--ica-iters", str(args.ica_iters),
            "--seeds", str(args.seeds), "--t-end", str(t_end), "--call", call]
    if args.commit:
        base += ["--commit", args.commit]
    if args.images:
        base += ["--images", args.images]
    procs = []
    for i in range(args.workers):
        procs.append(subprocess.Popen(base + ["--worker", str(i)]))
        time.sleep(2.0)  # let the first worker claim the first job
    for p in procs:
        p.wait()
    pack(work, out, lambda *a: print(*a, flush=True))
    done = sorted(p.name[:-5] for p in (work / "claims").glob("*.done"))
    print(f"finished: {len(done)} jobs done: {done}; {t_end - time.time():.0f} s of the budget left", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
