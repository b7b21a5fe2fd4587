"""PyTorch oracle: runs a TorchScript fixture on a batch and prints the loss.

usage: torch_oracle.py MODEL.pt BATCH.safetensors [f32|f64]

With f64, the module's parameters, buffers and float inputs are converted to
float64, and so is every float32 the graph names: dtype arguments of casts
and factories (`.float()`, `arange(dtype=float32)`) and float32 tensor
constants. That is the same rule `glimmer-train --dtype=f64` applies, so the
two runs compute the same function in the same precision.
"""

import sys

import torch
from safetensors.torch import load_file

FLOAT32, FLOAT64 = 6, 7  # c10::ScalarType codes


def promote_graph(graph):
    for node in list(graph.nodes()):
        for block in node.blocks():
            promote_graph(block)
        if node.kind() == "prim::Constant" and node.output().type().kind() == "TensorType":
            t = node.t("value")
            if t.dtype == torch.float32:
                node.t_("value", t.double())
            continue
        try:
            schema = torch._C.parse_schema(node.schema())
        except Exception:
            continue
        for i, arg in enumerate(schema.arguments):
            if i >= len(list(node.inputs())):
                break
            if arg.name != "dtype":
                continue
            value = list(node.inputs())[i]
            producer = value.node()
            if producer.kind() == "prim::Constant" and producer.output().type().kind() == "IntType" \
                    and producer.i("value") == FLOAT32:
                with graph.insert_point_guard(node):
                    replacement = graph.insertConstant(FLOAT64)
                node.replaceInput(i, replacement)


def promote_module(module):
    for sub in [module] + [m for _, m in module.named_modules()]:
        for name in sub._c._method_names():
            promote_graph(sub._c._get_method(name).graph)


def main():
    model_path, batch_path = sys.argv[1], sys.argv[2]
    dtype = sys.argv[3] if len(sys.argv) > 3 else "f32"
    module = torch.jit.load(model_path)
    module.eval()
    batch = load_file(batch_path)
    if dtype == "f64":
        promote_module(module)
        module = module.double()
        batch = {k: (v.double() if v.is_floating_point() else v) for k, v in batch.items()}
    names = [a.name for a in module.forward.schema.arguments[1:]]
    with torch.no_grad():
        loss = module(*[batch[n] for n in names])
    print(f"{loss.item():.17g}")


if __name__ == "__main__":
    main()
