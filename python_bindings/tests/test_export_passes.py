"""glimmer.prepare_export: the rewrites that let torch.export.save write a
program with a data-dependent check (export_assertions) or torch.vmap
(export_vmap). Each program is saved, loaded back and run by PyTorch: the
same values as the module, and the check still raises."""

import pytest

torch = pytest.importorskip("torch")

import glimmer  # noqa: E402
from glimmer.export_assertions import lift_scalar_assertions  # noqa: E402
from glimmer.export_vmap import has_vmap, trace_out_vmap  # noqa: E402


class Checked(torch.nn.Module):
    """Checks its input's values as transformers' torch_compilable_check
    does under export."""

    def forward(self, ids, x):
        torch._check_tensor_all((ids == 3).sum() * 2 == x.shape[0])
        return x * 2


class Vmapped(torch.nn.Module):
    """A mask built with nested torch.vmap over index grids, as
    transformers' masks with overlays are; the block ids gathered at the
    indices."""

    def forward(self, blocks):
        def mask(q, kv):
            return (kv <= q) | (blocks[q] == blocks[kv])
        grid = torch.vmap(torch.vmap(mask, in_dims=(None, 0)),
                          in_dims=(0, None))
        n = blocks.shape[0]
        return grid(torch.arange(n), torch.arange(n))


def _roundtrip(program, tmp_path):
    path = tmp_path / "p.pt2"
    torch.export.save(program, str(path))
    return torch.export.load(str(path)).module()


def test_check_is_lifted_to_a_tensor_assertion(tmp_path):
    ids, x = torch.tensor([3, 1, 3]), torch.ones(4)
    program = torch.export.export(Checked(), (ids, x), strict=False)
    with pytest.raises(Exception, match="cast_symbool_to_symint_guardless"):
        torch.export.save(program, str(tmp_path / "raw.pt2"))
    program, count = lift_scalar_assertions(program)
    assert count == 1
    targets = [n.target for n in program.graph.nodes]
    assert torch.ops.aten._assert_async.msg in targets
    assert torch.ops.aten._assert_scalar.default not in targets
    module = _roundtrip(program, tmp_path)
    torch.testing.assert_close(module(ids, x), x * 2)
    # The check is kept: one image token fewer fails it, in PyTorch.
    with pytest.raises(RuntimeError, match=r"Runtime assertion failed .*"
                       r"\(u0 = .*\.item\(\)\)"):
        module(torch.tensor([3, 1, 1]), x)


def test_item_read_as_a_size_stays(tmp_path):
    class Sized(torch.nn.Module):
        def forward(self, x):
            n = (x > 0).sum().item()
            return x.new_zeros(n) + 1

    program = torch.export.export(Sized(), (torch.ones(3),), strict=False)
    program, _ = lift_scalar_assertions(program)
    assert torch.ops.aten.item.default in [n.target for n in
                                           program.graph.nodes]
    module = _roundtrip(program, tmp_path)
    torch.testing.assert_close(module(torch.tensor([1.0, -1.0, 2.0])),
                               torch.ones(2))


def test_vmap_is_traced_out(tmp_path):
    blocks = torch.tensor([0, 0, 1, 1, 1, 2])
    program = torch.export.export(Vmapped(), (blocks,), strict=False)
    assert has_vmap(program)
    program = trace_out_vmap(program)
    assert not has_vmap(program)
    module = _roundtrip(program, tmp_path)
    other = torch.tensor([0, 1, 1, 2, 2, 2])
    for b in (blocks, other):
        torch.testing.assert_close(module(b), Vmapped()(b))


def test_prepare_export_leaves_plain_programs_alone():
    program = torch.export.export(torch.nn.Linear(2, 3),
                                  (torch.ones(1, 2),), strict=False)
    assert glimmer.prepare_export(program) is program
