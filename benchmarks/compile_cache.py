"""Compile time of the models through ``torch.compile(backend=affine_ir)``: a first process with an empty
disk cache, then a second process sharing it (issue 21: the second should compile in under a tenth).

    python benchmarks/compile_cache.py                  # the six models of benchmarks/model_zoo.py, small, CPU
    python benchmarks/compile_cache.py resnet50 gpt2_block

Per model, two fresh processes share a new ``$AFFINE_IR_CACHE``; each compiles and calls the model once
and reports the CPU time (``time.process_time``) of that first call and of the time spent inside
``frontend.torch_backend.compile_fx`` (our import, the passes or the cache load, code generation), and
which graphs the disk cache had. The ratio of the second process to the first is printed for both.
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHILD = r'''
import sys, time, json
BENCH = sys.argv[2]
sys.path.insert(0, sys.argv[3])
sys.path.insert(0, BENCH)
import torch
from model_zoo import zoo
from frontend import torch_backend
name = sys.argv[1]
spent = [0.0]
orig = torch_backend.compile_fx
def timed(*a, **k):
    t = time.process_time(); r = orig(*a, **k); spent[0] += time.process_time() - t; return r
torch_backend.compile_fx = timed
m, shape = zoo(1, small=True)[name]
x = torch.randn(shape)
with torch.no_grad():
    c = torch.compile(m, backend=torch_backend.affine_ir_backend)
    t = time.process_time(); c(x); total = time.process_time() - t
hits = [g.cache_hit for g in torch_backend.compiled_graphs()]
print(json.dumps({"model": name, "total_s": total, "backend_s": spent[0], "hits": hits}))
'''
MODELS = ["resnet18", "resnet50", "mobilenet_v2", "bert_layer", "gpt2_block", "mixer_block"]


def first_and_second(name: str) -> tuple[dict, dict]:
    """The child's report of a first process (empty cache) and of a second one sharing its cache."""
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, AFFINE_IR_CACHE=d)
        rows = []
        for _ in range(2):
            out = subprocess.run([sys.executable, "-c", CHILD, name, str(ROOT / "benchmarks"), str(ROOT)], env=env,
                                 capture_output=True, text=True)
            lines = [x for x in out.stdout.splitlines() if x.startswith("{")]
            rows.append(json.loads(lines[-1]) if lines else {"error": out.stderr[-500:]})
    return rows[0], rows[1]


def main() -> None:
    for name in sys.argv[1:] or MODELS:
        a, b = first_and_second(name)
        if "error" in a or "error" in b:
            print(name, a, b, flush=True)
            continue
        print(f"{name:14s} first {a['total_s']:7.2f} s (backend {a['backend_s']:6.2f})  second {b['total_s']:6.2f} s "
              f"(backend {b['backend_s']:5.2f}, hits {sum(b['hits'])}/{len(b['hits'])})  ratio total "
              f"{b['total_s'] / a['total_s']:.3f}, backend {b['backend_s'] / a['backend_s']:.3f}", flush=True)


if __name__ == "__main__":
    main()
