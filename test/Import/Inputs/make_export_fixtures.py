#!/usr/bin/env python3
"""torch.export archives for the export archive reader's tests.

    python make_export_fixtures.py OUTDIR

exports small modules with torch.export.export(..., strict=False), saves them
with torch.export.save, and derives broken copies of one of them, all into
OUTDIR:

  mlp.pt2          a two-layer MLP with a buffer (weights stored)
  mlp_meta.pt2     the same MLP built on the meta device (no payloads)
  dynamic.pt2      a module with a dynamic batch dimension (torch.export.Dim)
                   whose nodes take many argument kinds
  joint.pt2        the joint forward-backward graph of a linear layer with a
                   cross-entropy loss (loss and gradient outputs)
  cond.pt2         torch.cond, whose branches are subgraphs
  not_zip.pt2      a text file
  truncated.pt2    the first half of mlp.pt2
  torchscript.pt2  a TorchScript archive (a zip, but not a torch.export one)
  no_model.pt2     mlp.pt2 without models/model.json
  bad_json.pt2     mlp.pt2 whose model JSON is cut short
  major.pt2        mlp.pt2 whose schema major version is 99
  no_target.pt2    mlp.pt2 without the target of its first node
  bad_kind.pt2     mlp.pt2 whose first argument has the kind `as_bogus`
  bad_type.pt2     mlp.pt2 whose first tensor value's dtype is a string
  bad_ref.pt2      mlp.pt2 whose first node reads a tensor the graph lacks
  bad_signature.pt2
                   mlp.pt2 whose signature names its first two inputs in
                   the other order than the graph
  unbound.pt2      mlp.pt2 whose weights config lacks fc2.bias
  pickled.pt2      a parameter that is a tensor subclass (TwoTensor), which
                   torch.export.save pickles
  unreadable_payloads.pt2
                   mlp.pt2 whose weight records cannot be read (their local
                   zip headers are zeroed; the central directory, which
                   lists them with their sizes, is intact)
"""

import json
import os
import sys
import warnings
import zipfile

import torch
from torch.export.experimental import _export_forward_backward


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.fc2 = torch.nn.Linear(8, 3)
        self.register_buffer("scale", torch.full((3,), 0.5))

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x))) * self.scale


class Dynamic(torch.nn.Module):
    """Ops whose arguments are symbolic sizes, lists, scalars and dtypes; a
    non-persistent buffer that is a strided view into a larger storage, and
    a tensor constant (both stored with the constants)."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(6, 6, bias=False)
        # [[4, 6], [8, 10]] transposed: sizes [2, 2], strides [2, 4],
        # storage offset 4 in a storage of 12 floats.
        table = torch.arange(12.0).view(3, 4)[1:, ::2].t()
        self.register_buffer("table", table, persistent=False)
        self.offset = torch.tensor([1.0, 2.0])

    def forward(self, x, idx):
        b = x.shape[0]
        y = self.proj(x).view(b, 2, 3)  # sym ints
        s = y.sum(dim=[1], keepdim=True)  # ints, bool
        z = torch.cat([y, s], dim=1)  # tensors, int
        z = z.to(torch.float64) * 2.5  # scalar type, float
        g = z[:, idx]  # optional tensors
        ones = torch.ones(b, 2, device="cpu")
        return g.transpose(0, 1).contiguous(), ones, self.table * self.offset


class Loss(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x, y):
        return (torch.nn.functional.cross_entropy(self.fc(x), y),)


class Cond(torch.nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, torch.sin, torch.cos, (x,))


class Pickled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        from torch.testing._internal.two_tensor import TwoTensor

        self.w = torch.nn.Parameter(TwoTensor(torch.ones(2), torch.ones(2)))

    def forward(self, x):
        return x + self.w


def export(module, args, path, dynamic_shapes=None):
    program = torch.export.export(
        module, args, dynamic_shapes=dynamic_shapes, strict=False
    )
    torch.export.save(program, path)


def rewrite(src, dst, edit):
    """Copies the zip `src` to `dst`, passing each entry through
    edit(name, data), which returns the new bytes or None to drop it."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = edit(info.filename, zin.read(info))
            if data is not None:
                zout.writestr(info, data)


def edit_model(edit_json):
    def edit(name, data):
        if name.endswith("/models/model.json"):
            model = json.loads(data)
            edit_json(model)
            return json.dumps(model).encode()
        return data

    return edit


def set_major(model):
    model["schema_version"]["major"] = 99


def drop_target(model):
    del model["graph_module"]["graph"]["nodes"][0]["target"]


def bogus_kind(model):
    arg = model["graph_module"]["graph"]["nodes"][0]["inputs"][0]["arg"]
    arg["as_bogus"] = arg.pop("as_tensor")


def drop_fc2_bias(name, data):
    if name.endswith("/data/weights/model_weights_config.json"):
        config = json.loads(data)
        del config["config"]["fc2.bias"]
        return json.dumps(config).encode()
    return data


def bad_type(model):
    values = model["graph_module"]["graph"]["tensor_values"]
    values[next(iter(values))]["dtype"] = "float32"


def bad_ref(model):
    arg = model["graph_module"]["graph"]["nodes"][0]["inputs"][0]["arg"]
    arg["as_tensor"]["name"] = "ghost"


def bad_signature(model):
    specs = model["graph_module"]["signature"]["input_specs"]
    specs[0], specs[1] = specs[1], specs[0]


def zero_payload_headers(src, dst):
    """Copies `src` to `dst` with the fixed 30-byte local header of each
    weight record zeroed."""
    with zipfile.ZipFile(src) as z:
        offsets = [i.header_offset for i in z.infolist()
                   if "/data/weights/weight_" in i.filename]
    with open(src, "rb") as f:
        data = bytearray(f.read())
    for offset in offsets:
        data[offset : offset + 30] = bytes(30)
    with open(dst, "wb") as f:
        f.write(data)


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    out = lambda name: os.path.join(outdir, name)
    torch.manual_seed(0)
    # Saving weights on the meta device warns that it cannot find their
    # storage's data, which is the point of that fixture.
    warnings.filterwarnings("ignore", message="No complete tensor found")

    export(MLP(), (torch.randn(2, 4),), out("mlp.pt2"))
    with torch.device("meta"):
        export(MLP(), (torch.randn(2, 4),), out("mlp_meta.pt2"))
    batch = torch.export.Dim("batch", min=2, max=64)
    export(
        Dynamic(),
        (torch.randn(5, 6), torch.tensor([0, 2])),
        out("dynamic.pt2"),
        dynamic_shapes={"x": {0: batch}, "idx": None},
    )

    loss = torch.export.export(
        Loss(), (torch.randn(3, 4), torch.tensor([0, 1, 1])), strict=False
    )
    joint = _export_forward_backward(loss.run_decompositions())
    torch.export.save(joint, out("joint.pt2"))
    export(Cond(), (torch.randn(3),), out("cond.pt2"))

    mlp = out("mlp.pt2")
    with open(out("not_zip.pt2"), "w") as f:
        f.write("this is not an archive\n")
    with open(mlp, "rb") as f:
        data = f.read()
    with open(out("truncated.pt2"), "wb") as f:
        f.write(data[: len(data) // 2])
    torch.jit.save(torch.jit.script(MLP()), out("torchscript.pt2"))
    rewrite(mlp, out("no_model.pt2"),
            lambda n, d: None if n.endswith("/models/model.json") else d)
    rewrite(mlp, out("bad_json.pt2"),
            lambda n, d: d[:100] if n.endswith("/models/model.json") else d)
    rewrite(mlp, out("major.pt2"), edit_model(set_major))
    rewrite(mlp, out("no_target.pt2"), edit_model(drop_target))
    rewrite(mlp, out("bad_kind.pt2"), edit_model(bogus_kind))
    rewrite(mlp, out("bad_type.pt2"), edit_model(bad_type))
    rewrite(mlp, out("bad_ref.pt2"), edit_model(bad_ref))
    rewrite(mlp, out("bad_signature.pt2"), edit_model(bad_signature))
    rewrite(mlp, out("unbound.pt2"), drop_fc2_bias)
    export(Pickled(), (torch.randn(2),), out("pickled.pt2"))
    zero_payload_headers(mlp, out("unreadable_payloads.pt2"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
