"""Read a SPADE lake through the spade CLI: every table comes from `spade query --format csv`.

Settings come from the environment so CI and people run the same notebooks:
  SPADE_BIN   the spade binary (default: `spade` on PATH, else ../bin/spade)
  SPADE_LAKE  the lake URI (default ./lake)
  SPADE_RUNS  comma-separated runs to plot (default: every run of the lake)
  SPADE_OUT   a directory to save the figures into as PNG (default: none)
"""
import io
import os
import shutil
import subprocess

import pandas as pd

HERE = os.path.dirname(os.path.abspath("__file__"))


def spade_bin():
    """Return the path of the spade binary."""
    explicit = os.environ.get("SPADE_BIN")
    if explicit:
        return explicit
    found = shutil.which("spade")
    if found:
        return found
    return os.path.join(HERE, "..", "bin", "spade")


class SpadeError(RuntimeError):
    """spade refused or failed; the message is spade's own: for a refusal (exit 2, such as a lake path
    that holds no lake) its one line, otherwise everything it wrote on stderr."""


def _spade(*args, stdin=None):
    """Run spade with the lake flag and return its stdout; a failure raises SpadeError."""
    cmd = [spade_bin(), "--lake", os.environ.get("SPADE_LAKE") or "./lake", *args]
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    if proc.returncode == 2:
        raise SpadeError(proc.stderr.strip().splitlines()[0] if proc.stderr.strip() else f"{' '.join(cmd)} exited 2")
    if proc.returncode != 0:
        raise SpadeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout


def query(sql, runs=None):
    """Run SQL over the runs (all runs of the lake when None) and return a DataFrame."""
    args = []
    for run in runs or []:
        args += ["--run", run]
    out = _spade(*args, "query", "--format", "csv", stdin=sql)
    return pd.read_csv(io.StringIO(out), na_values=["NULL"], keep_default_na=False)


def runs():
    """Return the runs to plot: SPADE_RUNS, else every run with envs."""
    chosen = os.environ.get("SPADE_RUNS", "")
    if chosen:
        return [r for r in chosen.split(",") if r]
    return sorted(query("select distinct run from envs")["run"])


def model(name, run):
    """Run the model <name> for one run with the run's parameters. The SQL comes from spade itself
    (`spade metrics --sql NAME`, the models embedded in the binary), so a notebook runs from any directory."""
    script = _spade("--run", run, "metrics", "--sql", name)
    return query(script, runs=[run])


def save(fig, name):
    """Save a figure as SPADE_OUT/<name>.png when SPADE_OUT is set."""
    out = os.environ.get("SPADE_OUT")
    if out:
        os.makedirs(out, exist_ok=True)
        fig.savefig(os.path.join(out, name + ".png"), dpi=110, bbox_inches="tight")
