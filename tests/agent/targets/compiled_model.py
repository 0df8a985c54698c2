"""GPU test target: a torch.compile'd model (Inductor's Triton kernels), run on command.

``run`` recompiles the model (``torch._dynamo.reset()``: Inductor kernels take a probe
toggle only when compiled again), runs it once and answers ``out SHA256``, the digest of
the output's bytes; ``exit`` leaves. Prints ``ready`` once CUDA is warm. Inductor is set
the way gtop's live probes need it: kernels compiled in this process, launched through
Triton's loader, no on-disk caches.
"""

import hashlib

import stdin_lines  # beside this file
import torch
import torch._dynamo
import torch._inductor.config as inductor_config

inductor_config.compile_threads = 1
inductor_config.use_static_cuda_launcher = False
inductor_config.force_disable_caches = True

torch.manual_seed(0)
w = torch.randn(512, 512, device="cuda")
x = torch.randn(1024, 512, device="cuda")


def model(v: torch.Tensor) -> torch.Tensor:
    h = torch.relu(v * 1.5 + 0.25)
    return torch.softmax(h, dim=-1) @ w + h.sum(dim=0)


torch.cuda.synchronize()
print("ready", flush=True)
for line in stdin_lines.lines():
    cmd = line.split()
    if not cmd:
        continue
    if cmd[0] == "run":
        try:
            torch._dynamo.reset()
            out = torch.compile(model)(x)
            torch.cuda.synchronize()
            digest = hashlib.sha256(out.cpu().numpy().tobytes()).hexdigest()
            print("out", digest, flush=True)
        except Exception as e:  # the test prints the target's answer on failure
            print("error", type(e).__name__, str(e).replace("\n", " ")[:500], flush=True)
    elif cmd[0] == "exit":
        break
