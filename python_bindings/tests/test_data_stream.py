"""Program.train() on a stream of batches: a torch DataLoader, a list of
paths, a directory, cycled into epochs when the steps outrun it, with the
numbers glimmer-train gives on the same stream (--data=DIR or a glob).

The stream is 8 distinct batches of the 4-layer reference VLM, written as
shards by test/E2E/Inputs/make_stream.py (the lit tests' script).
"""

import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
safetensors_torch = pytest.importorskip("safetensors.torch")

import glimmer  # noqa: E402
from finite_checks import assert_finite  # noqa: E402
from test_compile import CACHE, STEP, _glimmer_train  # noqa: E402

pytestmark = pytest.mark.filterwarnings(
    r"ignore:`torch\.jit\.\w+` is deprecated:DeprecationWarning")

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "examples" / "fixtures" / "reference_vlm_4l.pt"


@pytest.fixture(scope="module")
def stream(tmp_path_factory):
    """The 8 shards' directory."""
    out = tmp_path_factory.mktemp("stream")
    subprocess.run([sys.executable,
                    str(ROOT / "test" / "E2E" / "Inputs" / "make_stream.py"),
                    str(out), "8"], check=True)
    return out


def shards(directory):
    return sorted(directory.glob("*.safetensors"))


def train_cli(data, steps):
    """(step, loss, grad_norm) of each step of glimmer-train on `data`."""
    out = subprocess.run(
        [_glimmer_train(), str(MODEL), f"--data={data}", f"--steps={steps}",
         "--quiet", f"--cache-dir={CACHE}"],
        check=True, capture_output=True, text=True).stdout
    return [(int(s), float(l), float(g)) for s, l, g in STEP.findall(out)]


def steps_of(results):
    return [(r["step"], r["loss"], r["grad_norm"]) for r in results]


def compile_4l(stream):
    with glimmer.SpmdContext():
        return glimmer.compile(MODEL, shards(stream)[0])


class ShardDataset(torch.utils.data.Dataset):
    """Each shard as a dict of name -> tensor."""

    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        return safetensors_torch.load_file(str(self.paths[i]))


def test_dataloader_equals_glimmer_train_on_the_directory(stream):
    theirs = train_cli(stream, 8)
    loader = torch.utils.data.DataLoader(ShardDataset(shards(stream)),
                                         batch_size=None)
    results = compile_4l(stream).train(loader, steps=8)
    assert len(theirs) == 8
    assert steps_of(results) == theirs
    assert [r["shard"] for r in results] == list(range(8))
    assert_finite([r["loss"] for r in results] +
                  [r["grad_norm"] for r in results])
    # The batches differ, and so do the steps' losses.
    assert len({r["loss"] for r in results}) == 8
    # The directory itself gives the same numbers.
    assert steps_of(compile_4l(stream).train(stream, steps=8)) == theirs


def test_a_list_cycles_into_epochs_as_a_glob_does(stream):
    theirs = train_cli(f"{stream}/shard-00[0-3].safetensors", 8)
    first4 = [str(p) for p in shards(stream)[:4]]
    results = compile_4l(stream).train(first4, steps=8)
    assert len(theirs) == 8 and steps_of(results) == theirs
    assert [r["shard"] for r in results] == [0, 1, 2, 3, 0, 1, 2, 3]


def test_one_shard_directory_equals_the_file(stream, tmp_path):
    one = tmp_path / "one"
    one.mkdir()
    (one / "only.safetensors").write_bytes(shards(stream)[2].read_bytes())
    as_dir = compile_4l(stream).train(one, steps=3)
    as_file = compile_4l(stream).train(shards(stream)[2], steps=3)
    assert steps_of(as_dir) == steps_of(as_file)


def test_stream_errors(stream, tmp_path):
    program = compile_4l(stream)
    # An iterator is used up after one pass: no second epoch.
    with pytest.raises(ValueError, match="yields no batch when iterated "
                                         "again for epoch 2"):
        program.train(iter(shards(stream)[:2]), steps=3)
    with pytest.raises(ValueError, match="the data stream yields no batch"):
        program.train([], steps=1)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no .safetensors shard"):
        program.train(tmp_path / "empty", steps=1)
    with pytest.raises(ValueError, match="matches no file"):
        program.train(str(tmp_path / "none-*.safetensors"), steps=1)

    # The source's own exception reaches the caller, from the reader thread.
    def failing():
        yield str(shards(stream)[0])
        raise KeyError("no more data")

    with pytest.raises(KeyError, match="no more data"):
        program.train(failing(), steps=2)

    # A batch that does not fit the program names its place in the stream.
    bad = safetensors_torch.load_file(str(shards(stream)[1]))
    bad["labels"] = bad["labels"][:, :8].contiguous()
    with pytest.raises(RuntimeError,
                       match=r"batch 1 of the data \(<dict batch>\): tensor "
                             r"'labels' has shape \[2, 8\]"):
        program.train([str(shards(stream)[0]), bad], steps=2)
