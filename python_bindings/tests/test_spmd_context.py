"""The Python face of the thread-local SPMD context."""

import threading

import pytest

import glimmer
from glimmer import SpmdContext


def test_default_is_unsharded():
    c = SpmdContext.current()
    assert (c.dp_replicate, c.dp_shard, c.cp, c.tp, c.pp) == (1, 1, 1, 1, 1)
    assert c.sp is False
    assert c.world_size == 1
    assert str(c) == ""


def test_keyword_constructor_and_attributes():
    c = SpmdContext(dp_shard=2, cp=2, tp=2, pp=2, sp=True, microbatches=4)
    assert c.dp_shard == 2 and c.cp == 2 and c.tp == 2 and c.pp == 2
    assert c.sp is True
    assert c.microbatches == 4
    assert c.schedule == "1f1b" and c.balancer == "head_tail"
    assert c.world_size == 16
    assert str(c) == "dp_shard=2,cp=2,tp=2,pp=2,sp,microbatches=4"
    assert SpmdContext.parse(str(c)) == c


def test_with_block_sets_and_restores():
    with SpmdContext(cp=4) as c:
        assert c.cp == 4
        assert SpmdContext.current().cp == 4
    assert SpmdContext.current().cp == 1


def test_nesting_restores_the_outer_context():
    with SpmdContext(cp=2):
        with SpmdContext.parse("dp_shard=4,tp=2,sp"):
            assert SpmdContext.current().dp_shard == 4
            assert SpmdContext.current().cp == 1
        assert str(SpmdContext.current()) == "cp=2"
    assert str(SpmdContext.current()) == ""


def test_exception_inside_with_restores():
    with pytest.raises(RuntimeError):
        with SpmdContext(cp=2):
            raise RuntimeError("boom")
    assert SpmdContext.current().cp == 1


def test_threads_see_their_own_context():
    n = 6
    barrier = threading.Barrier(n)
    seen = {}

    def worker(i):
        # A new thread starts unsharded, whatever its parent holds.
        seen[(i, "start")] = SpmdContext.current().cp
        with SpmdContext(cp=i + 1):
            barrier.wait()  # all threads inside their own scope at once
            seen[(i, "inside")] = SpmdContext.current().cp
            with SpmdContext(cp=i + 1, dp_shard=2):
                seen[(i, "nested")] = (SpmdContext.current().cp,
                                       SpmdContext.current().dp_shard)
            seen[(i, "after")] = SpmdContext.current().dp_shard

    with SpmdContext(tp=2):
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert SpmdContext.current().tp == 2
    for i in range(n):
        assert seen[(i, "start")] == 1
        assert seen[(i, "inside")] == i + 1
        assert seen[(i, "nested")] == (i + 1, 2)
        assert seen[(i, "after")] == 1


@pytest.mark.parametrize("kwargs, message", [
    (dict(cp=0), "degree of 'cp' must be a positive integer, got '0'"),
    (dict(dp_shard=-1), "degree of 'dp_shard' must be a positive integer"),
    (dict(sp=True), "needs tp > 1"),
    (dict(schedule="zb"), "unknown pipeline schedule 'zb'"),
    (dict(balancer="zigzag"), "unknown CP load balancer 'zigzag'"),
])
def test_bad_keywords_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SpmdContext(**kwargs)


@pytest.mark.parametrize("text, message", [
    ("cp=2,cp=4", "duplicate key 'cp'"),
    ("ep=2", "unknown key 'ep'"),
    ("cp=2,,tp=2", "empty entry"),
])
def test_bad_text_raises(text, message):
    with pytest.raises(ValueError, match=message):
        SpmdContext.parse(text)


def test_keywords_only():
    with pytest.raises(TypeError):
        SpmdContext(2)  # positional degrees are ambiguous


def test_module_exports():
    assert glimmer.SpmdContext is SpmdContext
