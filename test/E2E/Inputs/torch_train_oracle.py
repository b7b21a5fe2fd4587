"""PyTorch training oracle: the same steps glimmer-train runs.

usage: torch_train_oracle.py MODEL.pt DATA DTYPE STEPS
           OPTIMIZER LR WEIGHT_DECAY MAX_NORM [BETA1 BETA2 EPS]

DATA is one batch (.safetensors; every step trains on it), or a stream of
shards as glimmer-train takes them: a directory (its *.safetensors files)
or a glob pattern, in name order, step k (from 0) on shard k mod N.

Loads the TorchScript fixture (promoted to float64 for DTYPE=f64, as
torch_oracle.py does; for DTYPE=bf16 the f32 module's forward runs under
torch.autocast(dtype=torch.bfloat16), the reference for glimmer-train
--dtype=bf16), then per step: forward on the batch, backward,
torch.nn.utils.clip_grad_norm_ (its returned norm is the grad norm before
clipping; with MAX_NORM=0 the norm is computed without clipping), and a
torch.optim step. Prints "step N | loss L | grad_norm G" per step.

With GLIMMER_ORACLE_DEVICE=cuda the model and batch run on the GPU, with
TF32 off (float32 matrix products in full float32).

With GLIMMER_ORACLE_WEIGHTS=PATH the parameters are first replaced, by
state_dict name, with those of a safetensors file or a Hugging Face
checkpoint directory (model.safetensors, or model.safetensors.index.json and
its shards), as glimmer-train --weights=PATH binds them; every parameter must
be there and every key must be a parameter or buffer.

With GLIMMER_ORACLE_PERTURB=REL[:SEED] every parameter is first scaled by
1 + REL * N(0, 1) (elementwise, a generator seeded with SEED, default 0):
how far the training moves under a change of the weights far below bf16's
resolution (REL = 1e-6) is the noise floor that bf16 parity is read
against (compare_steps.py --floor).
"""

import glob
import json
import os
import sys

import torch
from safetensors.torch import load_file

from torch_oracle import promote_module


def retarget_device_constants(module, device):
    """Traced graphs record the tracing device in ops such as arange; points
    those constants at `device` so the whole module runs there."""
    graphs = []
    for sub in module.modules():
        # Every method: a submodule called twice with other shapes is traced
        # as forward, forward1, ... (Gemma 3's rotary embedding).
        try:
            names = sub._c._method_names()
        except AttributeError:
            continue
        graphs += [sub._c._get_method(name).graph for name in names]
    for graph in graphs:
        for node in list(graph.nodes()):
            if (node.kind() == "prim::Constant"
                    and str(node.output().type()) == "Device"):
                with graph.insert_point_guard(node):
                    new = graph.insertConstant(torch.device(device))
                node.output().replaceAllUsesWith(new)
                node.destroy()


def load_stream(data):
    """The batches step k cycles through: one file, or a directory's or a
    glob pattern's shards in name order."""
    if os.path.isdir(data):
        paths = sorted(os.path.join(data, f) for f in os.listdir(data)
                       if f.endswith(".safetensors"))
    elif not os.path.exists(data) and any(c in data for c in "*?["):
        paths = sorted(glob.glob(data))
    else:
        paths = [data]
    if not paths:
        sys.exit(f"no shard in '{data}'")
    return [load_file(p) for p in paths]


def load_pretrained(module, path):
    """Copies the tensors of `path` (a file or a save_pretrained directory)
    into `module`'s parameters by name."""
    if os.path.isdir(path):
        index = os.path.join(path, "model.safetensors.index.json")
        files = (sorted(set(json.load(open(index))["weight_map"].values()))
                 if os.path.exists(index) else ["model.safetensors"])
        state = {}
        for f in files:
            state.update(load_file(os.path.join(path, f)))
    else:
        state = load_file(path)
    params = dict(module.named_parameters())
    known = set(params) | set(dict(module.named_buffers()))
    missing, unexpected = set(params) - set(state), set(state) - known
    if missing or unexpected:
        sys.exit(f"{path}: missing {sorted(missing)}, unexpected {sorted(unexpected)}")
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(state[name].to(p.dtype))


def main():
    (model_path, batch_path, dtype, steps, optimizer, lr, weight_decay,
     max_norm) = sys.argv[1:9]
    betas = (0.9, 0.999)
    eps = 1e-8
    if len(sys.argv) > 9:
        betas = (float(sys.argv[9]), float(sys.argv[10]))
        eps = float(sys.argv[11])
    steps, lr, weight_decay, max_norm = int(steps), float(lr), float(weight_decay), float(max_norm)
    module = torch.jit.load(model_path)
    if os.environ.get("GLIMMER_ORACLE_WEIGHTS"):
        load_pretrained(module, os.environ["GLIMMER_ORACLE_WEIGHTS"])
    stream = load_stream(batch_path)
    if dtype == "f64":
        promote_module(module)
        module = module.double()
        stream = [{k: (v.double() if v.is_floating_point() else v)
                   for k, v in batch.items()} for batch in stream]
    device = os.environ.get("GLIMMER_ORACLE_DEVICE", "cpu")
    if device != "cpu":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        module = module.to(device)
        retarget_device_constants(module, device)
        stream = [{k: v.to(device) for k, v in batch.items()}
                  for batch in stream]
    module.train()
    params = [p for p in module.parameters() if p.requires_grad]
    perturb = os.environ.get("GLIMMER_ORACLE_PERTURB")
    if perturb:
        rel, _, seed = perturb.partition(":")
        g = torch.Generator().manual_seed(int(seed or 0))
        with torch.no_grad():
            for p in params:
                noise = torch.randn(p.shape, generator=g, dtype=torch.float64)
                p.mul_((1 + float(rel) * noise).to(p.dtype).to(p.device))
    if optimizer == "adamw":
        opt = torch.optim.AdamW(params, lr=lr, betas=betas, eps=eps,
                                weight_decay=0.01 if weight_decay < 0 else weight_decay)
    else:
        opt = torch.optim.SGD(params, lr=lr, weight_decay=0.0 if weight_decay < 0 else weight_decay)
    names = [a.name for a in module.forward.schema.arguments[1:]]
    autocast = torch.autocast(device.split(":")[0], dtype=torch.bfloat16,
                              enabled=dtype == "bf16")
    for step in range(1, steps + 1):
        batch = stream[(step - 1) % len(stream)]
        opt.zero_grad(set_to_none=True)
        with autocast:
            loss = module(*[batch[n] for n in names])
        loss.backward()
        with_grads = [p for p in params if p.grad is not None]
        norm = torch.nn.utils.clip_grad_norm_(
            with_grads, max_norm if max_norm > 0 else float("inf"))
        opt.step()
        print(f"step {step} | loss {loss.item():.17g} | grad_norm {norm.item():.17g}")


if __name__ == "__main__":
    main()
