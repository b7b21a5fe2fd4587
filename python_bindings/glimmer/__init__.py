"""Glimmer: an MLIR compiler for training vision-language models with
context parallelism.

    import glimmer
    with glimmer.SpmdContext(dp_shard=2, cp=2):
        assert glimmer.SpmdContext.current().cp == 2
"""

from ._glimmer import SpmdContext

__all__ = ["SpmdContext"]
