#!/usr/bin/env python3
"""Checks lmforge's tracking to a real MLflow server (PyPI mlflow: `mlflow server` on a sqlite
store, artifacts served, on 127.0.0.1 at a free port), read back through MLflow's own client.

  finished  A short run: every resolved configuration key is a param with its value; the tags;
            every metric of metrics.jsonl is in MLflow once, with its value, and nothing else
            is; config.toml and the plots are artifacts, byte for byte; the status is FINISHED.
            Then, as if killed past its last checkpoint, the run is resumed (another learning
            rate, so redone steps differ): it goes on in the same MLflow run, and each
            (key, step) is still there once, the first value kept. A run whose update diverges
            ends FAILED; a server that refuses every call costs one warning, not the run.
  outage    A long run starts with the server down; the server comes up, is killed mid-run and
            restarted on the same store and port; the run never stops. Every metric is there
            once. Stopped by SIGTERM, the run is KILLED. Resumed while the server is down, it
            finishes without it; the same command once the server is back sends what it lacked.

Nothing waits on time: each step waits for what it needs (metrics.jsonl's lines, the server's
health, MLflow's history) by polling, with generous time-outs, and the long run lasts until the
check stops it.

    python3 tools/check_mlflow.py --lmforge build/release/lmforge finished
    python3 tools/check_mlflow.py --lmforge build/release/lmforge outage
"""
import argparse
import http.server
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import urllib.request

os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] = "false"  # before mlflow reads it
from mlflow.tracking import MlflowClient  # noqa: E402

TIMEOUT = 300  # seconds any one wait may take, on a loaded machine under a sanitizer
SERVERS = []  # every server started, for the end to stop


def wait_until(what, ready, timeout=TIMEOUT):
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.5)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`mlflow server` on a store and artifact directory of its own, stopped and started again
    on the same port."""

    def __init__(self, work):
        self.work, self.port, self.proc = work, free_port(), None
        self.uri = f"http://127.0.0.1:{self.port}"

    def start(self):
        log = open(os.path.join(self.work, "server.log"), "a")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(self.port),
             "--workers", "1", "--backend-store-uri", f"sqlite:///{self.work}/mlflow.db",
             "--artifacts-destination", f"{self.work}/artifacts", "--serve-artifacts"],
            stdout=log, stderr=log, start_new_session=True)
        SERVERS.append(self)
        wait_until("the MLflow server to answer", self.healthy)

    def healthy(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"mlflow server exited: {open(os.path.join(self.work, 'server.log')).read()[-3000:]}")
        try:
            with urllib.request.urlopen(self.uri + "/health", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def kill(self):
        """As a crash: SIGKILL to the server and its workers (its own process group)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        wait_until("the port to close", lambda: not self.listening())

    def listening(self):
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0


def prepare(lmforge, work):
    random.seed(1)
    words = "the sea whale ship captain and of a white was to in old storm".split()
    with open(os.path.join(work, "corpus.txt"), "w") as f:
        f.write(" ".join(random.choice(words) for _ in range(30000)))
    subprocess.run([lmforge, "prepare", "--tokenizer", "char", "--input", os.path.join(work, "corpus.txt"),
                    "--output", os.path.join(work, "data")], check=True, capture_output=True)


def config(work, name, uri, model, train, more=""):
    path = os.path.join(work, name + ".toml")
    with open(path, "w") as f:
        f.write(f"""[model]\npreset = "gpt2-nano"\n{model}\n[data]\ndir = "{work}/data"\n[train]\n{train}\nthreads = 1
[optim]\nwarmup_steps = 5\nschedule = "constant"\n[sample]\ncount = 0
[log]\nmlflow_uri = "{uri}"\nmlflow_experiment = "checks"\nrun_name = "{name}"\n[run]\ndir = "{work}/{name}"\n{more}""")
    return path


def train(lmforge, cfg, *sets, expect=0):
    args = [lmforge, "train", cfg] + [a for s in sets for a in ("--set", s)]
    r = subprocess.run(args, capture_output=True, text=True)
    assert r.returncode == expect, f"{' '.join(args)}: exit {r.returncode}\n{r.stderr[-4000:]}"
    return r.stderr


def jsonl_metrics(run_dir):
    """(MLflow key, step) -> value for every number of metrics.jsonl; the key is the line's group
    (as lmforge names TensorBoard's scalars) and the field."""
    out = {}
    for line in open(os.path.join(run_dir, "metrics.jsonl")):
        try:
            j = json.loads(line)
        except json.JSONDecodeError:
            continue  # a running writer's half line
        group = ("epoch" if "epoch_loss" in j else "multiple_choice" if "mc_accuracy" in j
                 else "train" if "loss" in j else "val")
        for k, v in j.items():
            if k != "step" and v is not None:
                out[(f"{group}/{k}", j["step"])] = v
    return out


def mlflow_metrics(client, run_id):
    """(key, step) -> value of every metric the run holds, asserting each (key, step) once."""
    out = {}
    for key in client.get_run(run_id).data.metrics:
        for m in client.get_metric_history(run_id, key):
            assert (key, m.step) not in out, f"{key} at step {m.step} twice: {out[(key, m.step)]} and {m.value}"
            out[(key, m.step)] = m.value
    return out


def check_metrics(client, run_id, expected):
    got = mlflow_metrics(client, run_id)
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    assert not missing, f"{len(missing)} metrics not in MLflow, e.g. {missing[:5]}"
    assert not extra, f"{len(extra)} metrics in MLflow that metrics.jsonl lacks, e.g. {extra[:5]}"
    wrong = [(k, expected[k], got[k]) for k in expected if got[k] != expected[k]]
    assert not wrong, f"{len(wrong)} values differ, e.g. {wrong[:5]}"
    return len(got)


def run_id_of(run_dir):
    return json.load(open(os.path.join(run_dir, "mlflow.json")))["run_id"]


def check_params(client, run_id, run_dir):
    params = client.get_run(run_id).data.params
    resolved = tomllib.load(open(os.path.join(run_dir, "config.toml"), "rb"))
    n = 0
    for section, keys in resolved.items():
        for key, value in keys.items():
            got = params[f"{section}.{key}"]
            if isinstance(value, bool):
                assert got == str(value).lower(), (section, key, got)
            elif isinstance(value, (int, float)):
                assert float(got) == value, (section, key, got, value)
            else:
                assert got == value, (section, key, got, value)
            n += 1
    assert n == len(params), f"{len(params)} params for {n} configuration keys"
    return n


def check_artifacts(client, run_id, run_dir, work):
    names = ["config.toml", "plots/loss.png", "plots/loss.svg"]
    listed = {a.path for a in client.list_artifacts(run_id)} | {a.path for a in client.list_artifacts(run_id, "plots")}
    for name in names:
        assert name in listed, f"{name} not among the artifacts {sorted(listed)}"
        local = client.download_artifacts(run_id, name, tempfile.mkdtemp(dir=work))
        assert open(local, "rb").read() == open(os.path.join(run_dir, name), "rb").read(), name
    return names


def check_finished(lmforge, work):
    prepare(lmforge, work)
    server = Server(work)
    server.start()
    client = MlflowClient(server.uri)
    model = "n_layer = 1\nn_head = 2\nn_embd = 32\nblock_size = 32"
    cfg = config(work, "short", server.uri, model, "batch_size = 4\nseq_len = 32\nmax_steps = 25",
                 "[eval]\nevery = 5\nbatches = 2\n[checkpoint]\nevery = 10\n")
    log = train(lmforge, cfg)
    run_dir = os.path.join(work, "short")
    run_id = run_id_of(run_dir)
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.info.end_time, run.info
    assert run.info.run_name == "short", run.info.run_name
    tags = run.data.tags
    assert tags["host"] == socket.gethostname() and tags["task"] == "lm" and tags["processes"] == "1", tags
    assert log.find(f"lmforge {tags['lmforge.version']} ") >= 0, "the version tag is the log's"
    n_params = check_params(client, run_id, run_dir)
    first = jsonl_metrics(run_dir)
    n_metrics = check_metrics(client, run_id, first)
    artifacts = check_artifacts(client, run_id, run_dir, work)
    print(f"finished: {n_params} params, {n_metrics} metrics equal to metrics.jsonl, {len(artifacts)} artifacts, "
          f"tags {sorted(tags)}, FINISHED")

    # A crash after step 25's metrics but before its checkpoint: the resume redoes steps 20-24
    # with another learning rate. MLflow keeps what it had for those (key, step)s.
    shutil.rmtree(os.path.join(run_dir, "checkpoints", "step_000025"))
    with open(os.path.join(run_dir, "latest"), "w") as f:
        f.write("step_000020\n")
    log = train(lmforge, cfg, "train.max_steps=30", "optim.lr=0.001")
    assert "MLflow keeps the params the run started with; changed since: train.max_steps = 30, optim.lr = 0.001" in log, log
    assert run_id_of(run_dir) == run_id
    assert [r.info.run_id for r in client.search_runs([run.info.experiment_id])] == [run_id]
    resumed = jsonl_metrics(run_dir)
    redone = [k for k in first if k[1] >= 20 and k in resumed and resumed[k] != first[k]]
    assert redone, "the resumed run redid steps with other values"
    n_metrics = check_metrics(client, run_id, {**resumed, **first})
    assert client.get_run(run_id).info.status == "FINISHED"
    print(f"resumed: the same MLflow run, {n_metrics} metrics each once, {len(redone)} redone values kept as first sent")

    cfg = config(work, "diverges", server.uri, model, "batch_size = 4\nseq_len = 32\nmax_steps = 25",
                 "[eval]\nevery = 0\n")
    log = train(lmforge, cfg, "optim.lr=1e30", expect=1)
    failed = client.get_run(run_id_of(os.path.join(work, "diverges")))
    assert failed.info.status == "FAILED", failed.info
    check_metrics(client, failed.info.run_id, jsonl_metrics(os.path.join(work, "diverges")))
    print("diverges: FAILED, its metrics sent")

    server.kill()
    check_refusing_server(lmforge, work, model)


def check_refusing_server(lmforge, work, model):
    class Refuse(http.server.BaseHTTPRequestHandler):
        def answer(self):
            body = b'{"error_code": "PERMISSION_DENIED", "message": "not for you"}'
            self.send_response(403)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = answer

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    uri = f"http://127.0.0.1:{server.server_address[1]}"
    cfg = config(work, "refused", uri, model, "batch_size = 4\nseq_len = 32\nmax_steps = 10",
                 "[eval]\nevery = 0\n[checkpoint]\nevery = 5\n")
    log = train(lmforge, cfg)
    warnings = [line for line in log.splitlines() if "[warn]" in line and "MLflow" in line]
    assert len(warnings) == 1 and "MLflow refused the run" in warnings[0] and "not for you" in warnings[0], log
    server.shutdown()
    print(f"refused: one warning ({warnings[0].strip()[:100]}...), the run trained")


def steps_in(client, run_id):
    try:
        return {m.step for m in client.get_metric_history(run_id, "train/loss")}
    except Exception:  # the server is still coming up
        return set()


def trained(run_dir):
    return sum(1 for _, step in jsonl_metrics(run_dir) if _ == "train/loss")


def check_outage(lmforge, work):
    prepare(lmforge, work)
    server = Server(work)
    client = MlflowClient(server.uri)
    model = "n_layer = 4\nn_head = 4\nn_embd = 256\nblock_size = 128"  # some 0.1 s a step
    cfg = config(work, "long", server.uri, model, "batch_size = 8\nseq_len = 128\nmax_steps = 1000000",
                 "[eval]\nevery = 50\nbatches = 1\n[checkpoint]\nevery = 1000\n")
    run_dir = os.path.join(work, "long")
    log_path = os.path.join(work, "long.log")
    proc = subprocess.Popen([lmforge, "train", cfg], stdout=subprocess.DEVNULL, stderr=open(log_path, "w"))
    try:
        # Down from the start: the run trains on and says so once.
        wait_until("steps while the server is down", lambda: os.path.exists(os.path.join(run_dir, "metrics.jsonl"))
                   and trained(run_dir) >= 5)
        wait_until("the warning", lambda: "is unreachable or failing" in open(log_path).read())
        server.start()
        wait_until("the MLflow run", lambda: os.path.exists(os.path.join(run_dir, "mlflow.json")))
        run_id = run_id_of(run_dir)
        reached = trained(run_dir)
        wait_until(f"MLflow to hold steps 0..{reached - 1}", lambda: set(range(reached)) <= steps_in(client, run_id))
        # Killed mid-run, while the run trains on; back on the same store and port.
        server.kill()
        killed_at = trained(run_dir)
        wait_until("steps while the server is killed", lambda: trained(run_dir) >= killed_at + 20)
        wait_until("the second warning", lambda: open(log_path).read().count("is unreachable or failing") == 2)
        server.start()
        reached = trained(run_dir)
        wait_until(f"MLflow to hold steps 0..{reached - 1} again", lambda: set(range(reached)) <= steps_in(client, run_id))
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=TIMEOUT) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
    said = [line for line in open(log_path).read().splitlines() if "MLflow" in line]
    warnings = [line for line in said if "[warn]" in line]
    assert len(warnings) == 2 and all("is unreachable or failing" in w for w in warnings), "\n".join(said)
    assert sum("answers again" in line for line in said) == 2, "\n".join(said)
    assert client.get_run(run_id).info.status == "KILLED"
    n = check_metrics(client, run_id, jsonl_metrics(run_dir))
    print(f"outage: down at the start, killed at step {killed_at} and back: {n} metrics each once, KILLED")

    # Resumed with the server down, and finished without it; the same command once it is back.
    server.kill()
    stopped = int(open(os.path.join(run_dir, "latest")).read()[5:])
    end = f"train.max_steps={stopped + 10}"
    log = train(lmforge, cfg, end)
    assert "metric values and the run's end (FINISHED) are not recorded" in log, log[-3000:]
    server.start()
    log = train(lmforge, cfg, end)
    assert client.get_run(run_id).info.status == "FINISHED"
    n = check_metrics(client, run_id, jsonl_metrics(run_dir))
    print(f"outage: resumed at step {stopped} with the server down, then run again: {n} metrics each once, FINISHED")
    server.kill()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lmforge", required=True)
    ap.add_argument("check", choices=["finished", "outage"])
    args = ap.parse_args()
    lmforge = os.path.abspath(args.lmforge)
    with tempfile.TemporaryDirectory(prefix="lmforge-mlflow-") as work:
        try:
            (check_finished if args.check == "finished" else check_outage)(lmforge, work)
        except BaseException:
            log = os.path.join(work, "server.log")
            if os.path.exists(log):
                print(f"--- mlflow server log (end):\n{open(log).read()[-3000:]}", file=sys.stderr)
            raise
        finally:
            for server in SERVERS:
                server.kill()


if __name__ == "__main__":
    main()
