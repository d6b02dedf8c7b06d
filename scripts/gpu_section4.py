"""Section 4 on one lent GPU, as one time-boxed, resumable command (the runs listed below).

    PYTHONPATH=. python3 scripts/gpu_section4.py --out "$OUT" --budget 500 --commit <HEAD> --images data/photos/pack.npz

A queue of jobs, taken in order of priority by ``--workers`` processes that share the GPU. A
worker claims a job (an exclusive file in ``<work>/claims``) when the time left covers the job's
estimate; after each job every worker packs what there is into at most 8 files under ``--out``
(the device tool's limit: tars of at most 15 MiB, ``results.json``, ``log.txt``). Unfinished
runs are packed too (their ``state.pt`` holds every finished meta-iteration), so nothing that
ran is lost when the time runs out.

* ``shown/s2``: a third seed of the four-layer run the image page shows
  (``paper-l3-ensemble``: the authors' recipe with the ensemble-centred layer-3 input, on the
  bundled photographs; seeds 0 and 1 are ``data/weights/paper*``);
* ``photos/s<k>``: the ``paper`` recipe (the authors' layer-3 input: per-sample mean removed,
  PCA on 400,000 samples) on the photo pack (``--images``), all four layers, seeds 0-2;
* ``pca/<n>/s<k>``: the test of the L-BFGS main-set cell's failure: its layer 1
  (``ablation_config(paper, "lbfgs", "main")``) for 20 meta-iterations (two main sets), PCA fitted
  on 50,000 or 400,000 patches, seeds 0-1, logging the oriented share and J on unseen patches;
* ``d2/s<k>``: Supp. D.2 (CNCE, NCE with c reset, NCE with c carried over) for seeds 1 and 2,
  with the first-layer weights after every meta-iteration and the whitener.

Working state lives in ``--work`` (default ``/root/cnce-work``): a second call on the same warm
machine resumes every unfinished run and skips finished jobs. ``--scale smoke --device cpu`` is
the CPU test (``tests/test_gpu_section4.py``). Every call records the commit, the hash of the
package source and the hash of this driver (:func:`driver_hash`), which
:func:`companion.adopt.adopt_device_runs` checks against the commit.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import time
import traceback
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from cnce import provenance
from cnce.images import measures
from cnce.jobs import Job as RunJob
from cnce.images.configs import ablation_config, get_config
from cnce.images.draws import whitener_seed
from cnce.images.runs import lent_machine_session
from cnce.images.train import branch_state, make_source, train, train_comparison

#: the most a packed tar may hold (the tool returns files of at most 16 MiB)
TAR_LIMIT = 15 * 2**20
#: tars at most (8 files come back: these, results.json and log.txt)
MAX_TARS = 6
PCA_SIZES = (50_000, 400_000)


def driver_hash(path: str | os.PathLike | None = None) -> str:
    """SHA-256 of this driver's source (the file that chose configs, seeds and whitener sharing)."""
    return hashlib.sha256(Path(path or __file__).read_bytes()).hexdigest()


@dataclass(frozen=True)
class Job:
    name: str  # e.g. "photos/s1"
    kind: str  # "full", "layer1" or "d2"
    config: object  # an ImageConfig
    seed: int
    images: str | None  # None: the bundled photographs
    estimate: float  # seconds on the lent GPU, shared by the workers

    @property
    def tag(self) -> str:
        return self.name.replace("/", "-")


def configs(scale: str) -> dict:
    """The configurations of this round at ``scale`` (``"paper"`` or ``"smoke"``)."""
    if scale == "paper":
        shown, paper = get_config("paper-l3-ensemble"), get_config("paper")
        pca = {n: n for n in PCA_SIZES}
    elif scale == "smoke":
        paper = replace(get_config("smoke"), l3_centre="sample", n_whiten3=600)
        shown = replace(get_config("smoke"), name="smoke-l3-ensemble")
        pca = {n: s for n, s in zip(PCA_SIZES, (500, 2_000))}
    else:
        raise ValueError(f"scale must be 'paper' or 'smoke'; got {scale!r}")
    cell = ablation_config(paper, "lbfgs", "main")
    pca_cfg = {n: replace(cell, name=f"{paper.name}/lbfgs-main-pca{n // 1000}k", n_whiten=s,
                          meta_iters=(min(20, cell.meta_iters[0]),) + cell.meta_iters[1:])
               for n, s in pca.items()}
    return dict(shown=shown, paper=paper, pca=pca_cfg)


def parents(args) -> dict[str, Path]:
    """The finished four-layer runs that the ``l3-input`` round branches from, by job name."""
    if args.scale == "paper":
        w = Path(__file__).resolve().parents[1] / "data" / "weights"
        out = {f"l3/pack-ensemble/s{k}": w / "photos" / f"paper-seed{k}" for k in range(3)}
        out.update({f"l3/bundled-sample/s{k}": w / ("paper" if k == 0 else f"paper-seed{k}") for k in range(3)})
        return out
    r = Path(args.work) / "runs"  # smoke: the first round's runs in the same work folder
    out = {f"l3/pack-ensemble/s{k}": r / f"photos-s{k}" for k in range(3)}
    out["l3/bundled-sample/s2"] = r / "shown-s2"
    return out


def jobs(args) -> list[Job]:
    """The queue, in order of priority. Round ``runs``: the third seed of the page's run, then the
    photo pack, then the PCA test, then D.2. Round ``l3-input``: layers 3-4 again from the
    finished layers 1-2 of the four-layer runs with the other layer-3 input (the ensemble-centred
    one on the photo pack, the authors' on the bundled photographs), one change at a time."""
    c = configs(args.scale)
    quick = args.scale == "smoke"
    est = (lambda s: 1.0) if quick else (lambda s: s)
    if args.round == "l3-input":
        out = []
        for name in parents(args):
            images = args.images if "/pack-" in name else None
            cfg = c["shown"] if name.startswith("l3/pack-ensemble") else c["paper"]
            out.append(Job(name, "branch", cfg, int(name.rsplit("/s", 1)[1]), images, est(90.0)))
        return out
    out = [Job("shown/s2", "full", c["shown"], 2, None, est(330.0))]
    out += [Job(f"photos/s{k}", "full", c["paper"], k, args.images, est(330.0)) for k in range(3)]
    out += [Job(f"pca/{n // 1000}k/s{k}", "layer1", c["pca"][n], k, None, est(90.0)) for k in range(2) for n in PCA_SIZES]
    out += [Job(f"d2/s{k}", "d2", c["paper"], k, None, est(80.0)) for k in (1, 2)]
    return out


class Worker:
    def __init__(self, args, index: int):
        self.args, self.index = args, index
        self.work, self.out = Path(args.work), Path(args.out)
        self.t_end = args.t_end
        self.sources: dict = {}
        self.monitor = measures.Layer1Monitor()
        # the worker's record is a cnce.jobs.Job's checkpoint: resumed by a later call, written atomically
        self.job = RunJob(self.work, f"results-{index}.json", kind="json",
                          saver=lambda st, fh: fh.write(json.dumps(st) + "\n"), lock_file=f".results-{index}.lock")
        self.results = self.job.load(lambda: {"runs": {}, "jobs": {}})

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
            src.fit_whitener(cfg.n_whiten, cfg.D, whitener_seed(seed), device=self.args.device)
            self.sources[key] = src
        return self.sources[key]

    def record(self, name, st):
        self.results["runs"][name] = dict(
            config=st["config"], seed=st["seed"], method=st["method"], seconds=st["seconds"], data=st.get("data"),
            history={k: [{kk: vv for kk, vv in r.items() if kk != "eps_trace"} for r in v] for k, v in st["history"].items()},
            eps_traces={k: [r.get("eps_trace") for r in v] for k, v in st["history"].items()},
            sessions=st.get("sessions", []))

    def run(self, job: Job) -> None:
        a = self.args
        runs = self.work / "runs"
        if job.kind == "d2":
            res = train_comparison(job.config, out=self.work / "d2", work=self.work / "d2-runs", seed=job.seed,
                                   device=a.device, progress=False, variants=("cnce", "nce-reset", "nce"),
                                   monitor=self.monitor, on_session=lent_machine_session(a.commit, a.driver))
            runs.mkdir(parents=True, exist_ok=True)
            provenance.atomic_torch_save(res, runs / f"{job.tag}.pt")  # snapshots, histories and the whitener
            for v, h in res["history"].items():
                self.results["runs"][f"d2/{v}/s{job.seed}"] = dict(
                    seed=job.seed, config=res["config"], sessions=res.get("sessions"),
                    history={"1": [{k: x for k, x in r.items() if k != "eps_trace"} for r in h]})
            self.log(f"  {job.name}:", {v: round(h[-1].get("oriented", float("nan")), 3) for v, h in res["history"].items()})
            return
        if job.images is not None and not Path(job.images).exists():
            raise ValueError(f"images={job.images!r} does not exist")
        if job.name.startswith("photos/") and job.images is None:
            self.log(f"  {job.name}: no photo pack given (--images); skipped")
            return
        if job.kind == "branch":  # layers 3-4 afresh on the parent's finished layers 1-2
            parent = parents(a)[job.name]
            if not (parent / "state.pt").is_file():
                self.log(f"  {job.name}: no parent run at {parent}; skipped")
                return
            out = runs / job.tag
            if not (out / "state.pt").is_file():
                from cnce.images.runs import load_checkpoint

                st0 = load_checkpoint(parent / "state.pt")
                rel = parent.relative_to(parent.parents[1]) if a.scale == "smoke" else parent.relative_to(
                    Path(__file__).resolve().parents[1] / "data" / "weights")
                with RunJob(out, "state.pt") as run_job:  # the branch's first checkpoint, under the run's lock
                    run_job.save(branch_state(st0, job.config, parent_name=rel.as_posix()))
        layers = {"full": (1, 2, 3, 4), "layer1": (1,), "branch": (1, 2, 3, 4)}[job.kind]
        st = train(job.config, out=runs / job.tag, layers=layers, seed=job.seed,
                   source=self.source_for(job.config, job.seed, job.images), device=a.device, progress=False,
                   monitor=self.monitor, on_session=lent_machine_session(a.commit, a.driver),
                   data=(f"photo pack {Path(job.images).name} (scripts/photo-pack.sh)" if job.images
                         else "skimage.data bundled photographs"))
        self.record(job.name, st)
        h = st["history"]["1"]
        if job.kind == "branch":
            self.log(f"  {job.name}: final loss per layer", {k: round(v[-1]["loss"], 4) for k, v in st["history"].items()},
                     f"seconds per layer {({k: round(v) for k, v in st['seconds'].items()})}")
            return
        self.log(f"  {job.name}: layer 1 oriented {h[-1].get('oriented', float('nan')):.3f}, J unseen "
                 f"{h[-1]['loss_unseen']:.4f}; seconds per layer {({k: round(v) for k, v in st['seconds'].items()})}")

    def loop(self) -> None:
        claims = self.work / "claims"
        claims.mkdir(exist_ok=True)
        for job in jobs(self.args):
            if self.left() < 20:
                break
            if (claims / f"{job.tag}.done").exists():
                continue
            if job.estimate > self.left() - 10:
                continue  # a later, smaller job may still fit
            try:
                fd = os.open(claims / f"{job.tag}.{self.args.call}", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                os.close(fd)
            except FileExistsError:
                continue
            self.log(f"job {job.name} (estimate {job.estimate:.0f} s, {self.left():.0f} s left)")
            t = time.time()
            try:
                self.run(job)
                (claims / f"{job.tag}.done").touch()
                self.results["jobs"][job.name] = dict(seconds=time.time() - t, estimate=job.estimate, worker=self.index)
            except Exception:
                self.log(f"  {job.name} FAILED\n" + traceback.format_exc())
            self.job.save(self.results)
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


def _items(work: Path) -> list[tuple[Path, str]]:
    """``(file, name in the tar)`` of every run that has saved anything, largest first."""
    runs = work / "runs"
    items = []
    for d in sorted(runs.iterdir()) if runs.is_dir() else []:
        if d.is_dir() and (d / "state.pt").is_file():
            items += [(d / f, f"{d.name}/{f}") for f in ("state.pt", "provenance.json") if (d / f).is_file()]
        elif d.suffix == ".pt":
            items.append((d, d.name))
    return sorted(items, key=lambda it: -it[0].stat().st_size)


def pack(work: Path, out: Path, log) -> None:
    """Everything worth keeping in at most 8 files under ``out`` (one worker at a time):
    ``results.json``, ``log.txt`` and tars of the runs (first fit, largest first)."""
    with RunJob(work, None, lock_file="pack.lock", wait=True, quiet=True):  # cnce.jobs: a lock the packers take in turn
        try:
            provenance.atomic_write_text(out / "results.json", json.dumps(_merged_results(work)) + "\n")
            bins: list[list] = []
            for path, arc in _items(work):
                size = path.stat().st_size
                for b in bins:
                    if b[0] + size <= TAR_LIMIT:
                        b[0] += size
                        b[1].append((path, arc))
                        break
                else:
                    bins.append([size, [(path, arc)]])
            if len(bins) > MAX_TARS:
                log(f"  pack: {len(bins)} tars needed, {MAX_TARS} kept:", [a for b in bins[MAX_TARS:] for _, a in b[1]])
            for i, (_, members) in enumerate(bins[:MAX_TARS], 1):
                buf = io.BytesIO()
                with tarfile.open(fileobj=buf, mode="w") as tar:
                    for path, arc in members:
                        tar.add(path, arcname=arc)
                provenance.atomic_write(out / f"runs-{i}.tar", lambda fh: fh.write(buf.getvalue()), binary=True)
            for stale in out.glob("runs-*.tar"):
                if int(stale.stem.split("-")[1]) > min(len(bins), MAX_TARS):
                    stale.unlink()
            log("  packed (MiB):", {p.name: round(p.stat().st_size / 2**20, 2) for p in sorted(out.iterdir())})
        except Exception:
            log("  pack FAILED\n" + traceback.format_exc())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default="/root/cnce-work")
    ap.add_argument("--budget", type=float, default=500, help="seconds from now after which no job starts")
    ap.add_argument("--hard-stop", type=float, default=None,
                    help="seconds from now at which running jobs are stopped and packed (default: budget + 40); "
                         "their finished meta-iterations are kept")
    ap.add_argument("--commit", default=None, help="the commit this tree is (recorded in every run)")
    ap.add_argument("--images", default=None, help="photo pack for the photos jobs")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--scale", default="paper", choices=("paper", "smoke"))
    ap.add_argument("--round", default="runs", choices=("runs", "l3-input"),
                    help="runs: the runs listed in the docstring; l3-input: layers 3-4 with the other layer-3 input")
    ap.add_argument("--workers", type=int, default=6)
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--t-end", type=float, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--call", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.workers < 1:
        raise SystemExit(f"--workers must be >= 1; got {args.workers}")
    if args.budget <= 0:
        raise SystemExit(f"--budget must be > 0; got {args.budget}")
    if args.hard_stop is not None and args.hard_stop < args.budget:
        raise SystemExit(f"--hard-stop must be >= --budget ({args.budget}); got {args.hard_stop}")
    args.driver = os.path.abspath(__file__)
    work, out = Path(args.work), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    if args.worker is not None:
        torch.set_num_threads(2)
        w = Worker(args, args.worker)
        with w.job:  # one worker per index and work folder
            w.loop()
        return 0
    t_end = time.time() + args.budget
    call = time.strftime("%H%M%S")
    calls_path = work / "calls.json"
    calls = json.loads(calls_path.read_text()) if calls_path.is_file() else []
    calls.append(dict(started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), commit=args.commit,
                      source_hash=provenance.package_source_hash(exclude=()), driver_hash=driver_hash(),
                      torch=torch.__version__, gpu=torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
                      budget=args.budget, workers=args.workers, scale=args.scale, round=args.round, images=args.images))
    provenance.atomic_write_text(calls_path, json.dumps(calls) + "\n")
    base = [sys.executable, os.path.abspath(__file__), "--out", str(out), "--work", str(work), "--device", args.device,
            "--scale", args.scale, "--round", args.round, "--t-end", str(t_end), "--call", call]
    if args.commit:
        base += ["--commit", args.commit]
    if args.images:
        base += ["--images", args.images]
    procs = []
    for i in range(args.workers):
        procs.append(subprocess.Popen(base + ["--worker", str(i)]))
        time.sleep(1.0)  # let the first worker claim the first job
    hard = time.time() + (args.hard_stop if args.hard_stop is not None else args.budget + 40)
    say = lambda *a: print(*a, flush=True)  # noqa: E731
    last_pack = time.time()
    while any(p.poll() is None for p in procs):
        time.sleep(2.0)
        if time.time() >= hard:
            say(f"hard stop: {sum(p.poll() is None for p in procs)} workers still running are stopped")
            for p in procs:
                if p.poll() is None:
                    p.terminate()
            for p in procs:
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
            break
        if time.time() - last_pack > 45:  # what runs is kept even if no job ends before the stop
            pack(work, out, say)
            last_pack = time.time()
    pack(work, out, say)
    done = sorted(p.name[:-5] for p in (work / "claims").glob("*.done"))
    print(f"finished: {len(done)} jobs done: {done}; {t_end - time.time():.0f} s of the budget left", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
