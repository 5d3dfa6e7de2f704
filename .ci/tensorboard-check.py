#!/usr/bin/env python3
"""A run's event file as TensorBoard itself shows it, at its default settings.

Trains the classification example into a temporary folder, starts `tensorboard --logdir` on it
(the default loader: TensorBoard's Rust data server), and checks that the SCALARS tab lists
every tag of `metrics.csv` and holds each of its values (rounded to f32: TensorBoard stores
scalars as 32-bit floats). Exit 0 when it does. Usage: tensorboard-check.py PATH_TO_BINARY
"""

import csv
import json
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path


def f32(value: float) -> float:
    return struct.unpack("f", struct.pack("f", value))[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port: int, path: str):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
        return json.load(response)


def main() -> int:
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as artifacts:
        subprocess.run([binary, "--artifacts", artifacts, "--quiet"], check=True)
        logdir = Path(artifacts) / "three_class"
        rows = list(csv.DictReader(open(logdir / "run-1" / "metrics.csv")))
        expected = {}
        for row in rows:
            if row["step"]:
                tag, step = f"{row['split']}/{row['metric']}", int(row["step"])
            else:
                tag, step = f"epoch/{row['split']}/{row['metric']}", int(row["epoch"])
            expected.setdefault(tag, {})[step] = f32(float(row["value"]))
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir), "--port", str(port), "--host", "127.0.0.1"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            tags = {}
            deadline = time.time() + 120
            while time.time() < deadline:
                try:
                    tags = get(port, "/data/plugin/scalars/tags").get("run-1", {})
                except OSError:
                    tags = {}
                if set(tags) >= set(expected):
                    break
                time.sleep(1)
            missing = set(expected) - set(tags)
            if missing:
                print(f"TensorBoard lists no scalars for {sorted(missing)} (it lists {sorted(tags)})")
                return 1
            for tag, values in expected.items():
                query = urllib.parse.urlencode({"tag": tag, "run": "run-1"})
                shown = {step: value for _, step, value in get(port, f"/data/plugin/scalars/scalars?{query}")}
                if shown != values:
                    print(f"{tag}: TensorBoard shows {shown}, metrics.csv holds {values}")
                    return 1
            print(f"TensorBoard (default loader) shows all {len(rows)} values of metrics.csv under {len(expected)} tags")
            return 0
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    sys.exit(main())
