//===- Passes.td - Glimmer passes --------------------------*- tablegen -*-===//

#ifndef GLIMMER_DIALECT_GLIMMER_TRANSFORMS_PASSES_TD
#define GLIMMER_DIALECT_GLIMMER_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def GlimmerAttachSpmd : Pass<"glimmer-attach-spmd", "::mlir::ModuleOp"> {
  let summary = "Records the SPMD layout on the module";
  let description = [{
    Writes the parallel layout as `glimmer.spmd` on the module. The layout is
    the pass's `layout` option when given, otherwise the thread's current
    `glimmer::SpmdContext` (set by `glimmer-opt --spmd=...`, `glimmer-train
    --spmd=...` or Python's `with glimmer.SpmdContext(...)`). Every later pass
    reads the attribute instead of the thread-local context, so a test is
    reproducible from its IR alone. Re-running with the same layout is a
    no-op; recording a different layout over an existing one is an error,
    since the program may already be partitioned for the old one.

    Before (`glimmer-opt --spmd=dp_shard=2,cp=2 --glimmer-attach-spmd`):
    ```mlir
    module {
    }
    ```
    After:
    ```mlir
    module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2,cp=2">} {
    }
    ```
  }];
  let options = [
    Option<"layout", "layout", "std::string", /*default=*/"\"\"",
           "Layout text (as --spmd=); empty uses the thread's current context">,
  ];
  let dependentDialects = ["::glimmer::GlimmerDialect"];
}

def GlimmerMaterializeMesh : Pass<"glimmer-materialize-mesh", "::mlir::ModuleOp"> {
  let summary = "Declares the device mesh of the recorded layout";
  let description = [{
    Creates `glimmer.mesh @mesh` with the axes `dp_replicate, dp_shard, cp, tp,
    pp` sized from the module's `glimmer.spmd` attribute, for shardings and
    collectives to refer to. Fails with a diagnostic when no layout is
    recorded, and when a `@mesh` that disagrees with the layout exists.

    Before:
    ```mlir
    module attributes {glimmer.spmd = #glimmer.spmd<"cp=4">} {
    }
    ```
    After:
    ```mlir
    module attributes {glimmer.spmd = #glimmer.spmd<"cp=4">} {
      glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=4, "tp"=1, "pp"=1]>
    }
    ```
  }];
  let dependentDialects = ["::glimmer::GlimmerDialect"];
}

def GlimmerRecognizeAttention
    : Pass<"glimmer-recognize-attention", "::mlir::func::FuncOp"> {
  let summary = "Rewrites spelled-out softmax attention into glimmer.attention";
  let description = [{
    Models traced with eager attention (Hugging Face's
    `attn_implementation="eager"`) compute it op by op:
    `softmax(q @ k^T * scale + mask) @ v`, with the `[B, H, Tq, Tk]` scores
    and probabilities in memory and, under context parallelism, a mask cut
    along the queries. This pass recognises that chain and replaces it with
    `glimmer.attention`, whose kernels never build the score matrix, reading
    the additive mask into per-token terms (causal positions, a window,
    bidirectional blocks) as the importer does for
    `scaled_dot_product_attention`.

    Matched exactly: a softmax along the last dimension of
    `matmul(q, transpose(k, [0, 1, 3, 2])) * c` (or the matmul's
    `transpose_rhs`; c a positive splat),
    optionally plus a broadcast mask, whose result only feeds
    `matmul(p, v)`; q, k and v are `[B, H, T, D]`, the scores used nowhere
    else. Without a mask the attention is unmasked. A mask is rewritten
    only when every query keeps at least its own key (masking with the most
    negative float then equals masking with -inf); any other mask, or any
    other chain, is left as it is.

    Before:
    ```mlir
    %kt = glimmer.transpose %k permutation = [0, 1, 3, 2] : tensor<2x4x8x16xf32> -> tensor<2x4x16x8xf32>
    %s = glimmer.matmul %q, %kt : tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x8x8xf32>
    %ss = glimmer.mul %s, %scale : tensor<2x4x8x8xf32>
    %m = glimmer.add %ss, %mask : tensor<2x4x8x8xf32>
    %p = glimmer.softmax %m dim = 3 : tensor<2x4x8x8xf32>
    %o = glimmer.matmul %p, %v : tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
    ```
    After (`%mask` the causal one):
    ```mlir
    %pos = glimmer.iota dim = 1 : tensor<2x8xi64>
    %o, %lse = glimmer.attention %q, %k, %v
        positions(%pos, %pos : tensor<2x8xi64>, tensor<2x8xi64>) causal scale = 0.25
        : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
          -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
    ```
  }];
  let dependentDialects = ["::glimmer::GlimmerDialect"];
}

def GlimmerRecognizeVisionMerge
    : Pass<"glimmer-recognize-vision-merge", "::mlir::func::FuncOp"> {
  let summary = "Rewrites a model's image-feature merge into vision ops";
  let description = [{
    Models merge vision-encoder features into the token embeddings in several
    ways: a cumsum index gather (`idx = cumsum(tokens == IMG) - 1;
    where(mask, bank[idx.clamp(0)], embeds)`, torchtitan style) or
    `inputs_embeds.masked_scatter(mask, features)` (Hugging Face style). The
    importer lowers both to the same core pattern; this pass recognises it and
    replaces it with `glimmer.vision_bank_indices` + `glimmer.vision_gather`,
    the form that context parallelism shards (indices built on the full
    sequence, gather local to each rank).

    The pattern is matched exactly: the mask is `tokens == IMG` on a `[B, T]`
    integer tensor, the indices are the inclusive prefix sum of that same mask
    over the row-major flattened batch minus one, clamped at zero, the rows
    come from a `[N, D]` bank, and the select keeps the embeddings where the
    mask is false. Anything else is left untouched.

    Before:
    ```mlir
    %m = glimmer.compare eq, %tokens, %img : tensor<2x16xi64>
    %f = glimmer.reshape %m : tensor<2x16xi1> -> tensor<32xi1>
    %l = glimmer.convert %f : tensor<32xi1> to tensor<32xi64>
    %c = glimmer.cumsum %l dim = 0 : tensor<32xi64>
    %r = glimmer.reshape %c : tensor<32xi64> -> tensor<2x16xi64>
    %i = glimmer.sub %r, %one : tensor<2x16xi64>
    %j = glimmer.max %i, %zero : tensor<2x16xi64>
    %rows = glimmer.embedding %bank, %j : tensor<12x32xf32>, tensor<2x16xi64> -> tensor<2x16x32xf32>
    %m3 = glimmer.reshape %m : tensor<2x16xi1> -> tensor<2x16x1xi1>
    %mb = glimmer.broadcast_in_dim %m3 dims = [0, 1, 2] : tensor<2x16x1xi1> -> tensor<2x16x32xi1>
    %out = glimmer.select %mb, %rows, %embeds : tensor<2x16x32xi1>, tensor<2x16x32xf32>
    ```
    After:
    ```mlir
    %idx = glimmer.vision_bank_indices %tokens image_token_id = 63 : tensor<2x16xi64>
    %out = glimmer.vision_gather %embeds, %bank, %idx
        : tensor<2x16x32xf32>, tensor<12x32xf32>, tensor<2x16xi64>
    ```
  }];
  let dependentDialects = ["::glimmer::GlimmerDialect"];
}

def GlimmerMixedPrecision
    : Pass<"glimmer-mixed-precision", "::mlir::ModuleOp"> {
  let summary = "Mixed precision: bf16 compute, f32 parameters and loss";
  let description = [{
    Turns an f32 `@forward` into a mixed-precision one: bf16 compute with
    f32 master weights. The function's signature does not change
    (parameters, buffers and inputs stay f32 arguments, the loss an f32
    result). Runs on the global view, before partitioning and
    `glimmer-autodiff`; `--dtype=bf16` (policy `bf16`) and
    `--dtype=bf16-autocast` (policy `autocast`) of glimmer-train and
    glimmer-translate are an f32 import followed by this pass.

    One forward sweep in program order decides the precision of every op.
    Under both policies an f32 operand that bf16 compute reads is converted
    once per value (a parameter right before its first such use, where
    FSDP's all-gather then lands; constants become bf16 constants;
    broadcasts, reshapes and transposes are rebuilt on a bf16 copy of their
    input, so the convert sits on the op that computed the value, where
    fusion merges it, and attention still finds the transposes of its
    operands); attention's log-sum-exp and cross-entropy's `sum` stay f32
    (so is the division by the token count); a bf16 value the function
    returns is converted back to f32.

    Policy `bf16` (the default, the faster): every op downstream of a
    parameter computes in bf16 (the kernels accumulate in f32). An op with a
    bf16 or parameter floating-point operand computes in bf16 and its f32
    results become bf16; values computed only from inputs, buffers,
    integers and constants (RoPE tables from positions, masks) stay f32
    until they meet bf16 compute. Norms, softmax and the residual stream are
    bf16 tensors.

    Policy `autocast`: the precision of PyTorch's
    `autocast(torch.bfloat16)`.
    - `linear`, `matmul`, `conv2d`, `attention` read bf16; their results
      are bf16.
    - `rms_norm`, `layer_norm`, `softmax`, `exp`, `log`, `pow`, `rsqrt`,
      `reduce sum`, `sum_squares`, `cumsum` read f32: a bf16 operand is
      widened (exactly).
    - `cross_entropy` reads bf16 logits as they are (its kernels compute in
      f32, which widening them first would give, without an f32 copy of the
      logits).
    - Every other op promotes, as PyTorch's type promotion does: f32 when
      one of its floating-point operands of the highest category is f32
      (its bf16 operands widened), bf16 when all are bf16. The categories,
      as PyTorch ranks operands: dimensioned tensors, then 0-d values
      (possibly broadcast), then splat constants (Python scalars), so
      `x * 0.5` stays bf16.
    A norm whose result only bf16 ops read writes bf16 itself (it computes
    in f32 and rounds once, as the convert would, with no f32 copy of its
    result; its backward reads the bf16 cotangent). Rounding to bf16 thus
    happens where autocast rounds: at the outputs of bf16 ops and of ops
    whose inputs are all bf16, and at the inputs of bf16 ops. The residual
    stream, which adds bf16 branch outputs to f32 embeddings, is f32, and
    so is its gradient.

    After autodiff the converts' VJPs convert the cotangents back:
    gradients, `@apply_step`'s parameters and optimizer state are f32;
    reductions across ranks are f32 too (parameters are all-gathered, and
    their gradients reduce-scattered, in f32; the VJP of a bf16 all-gather,
    K and V over `cp`, sums the ranks' cotangents in f32).

    Errors: no `@forward` (option `function`), an unknown policy, a module
    that already has `@grad_step` or `@apply_step`, a floating-point type
    other than f32 in the function (an f64 import, or a function this pass
    already ran on).

    Before:
    ```mlir
    func.func @forward(%x: tensor<2x8xf32> {glimmer.input = "x"},
                       %w: tensor<4x8xf32> {glimmer.param = "w"},
                       %labels: tensor<2xi64> {glimmer.input = "labels"}) -> tensor<f32> {
      %h = glimmer.linear %x, %w : tensor<2x8xf32>, tensor<4x8xf32> -> tensor<2x4xf32>
      %s, %n = glimmer.cross_entropy %h, %labels ignore_index = -100
          : tensor<2x4xf32>, tensor<2xi64> -> tensor<f32>, tensor<i64>
      %nf = glimmer.convert %n : tensor<i64> to tensor<f32>
      %loss = glimmer.div %s, %nf : tensor<f32>
      return %loss : tensor<f32>
    }
    ```
    After:
    ```mlir
    func.func @forward(%x: tensor<2x8xf32> {glimmer.input = "x"},
                       %w: tensor<4x8xf32> {glimmer.param = "w"},
                       %labels: tensor<2xi64> {glimmer.input = "labels"}) -> tensor<f32> {
      %xb = glimmer.convert %x : tensor<2x8xf32> to tensor<2x8xbf16>
      %wb = glimmer.convert %w : tensor<4x8xf32> to tensor<4x8xbf16>
      %h = glimmer.linear %xb, %wb : tensor<2x8xbf16>, tensor<4x8xbf16> -> tensor<2x4xbf16>
      %s, %n = glimmer.cross_entropy %h, %labels ignore_index = -100
          : tensor<2x4xbf16>, tensor<2xi64> -> tensor<f32>, tensor<i64>
      %nf = glimmer.convert %n : tensor<i64> to tensor<f32>
      %loss = glimmer.div %s, %nf : tensor<f32>
      return %loss : tensor<f32>
    }
    ```
    A residual block under `policy=autocast`: the norm reads the f32
    stream and, read by a GEMM only, writes bf16; the add promotes to f32.
    ```mlir
      %n = glimmer.rms_norm %h, %g eps = 1.0e-05 : tensor<2x8xf32>, tensor<8xf32>
      %y = glimmer.linear %n, %w : tensor<2x8xf32>, tensor<8x8xf32> -> tensor<2x8xf32>
      %r = glimmer.add %h, %y : tensor<2x8xf32>
    ```
    becomes
    ```mlir
      %n = glimmer.rms_norm %h, %g eps = 1.0e-05 : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xbf16>
      %wb = glimmer.convert %w : tensor<8x8xf32> to tensor<8x8xbf16>
      %y = glimmer.linear %n, %wb : tensor<2x8xbf16>, tensor<8x8xbf16> -> tensor<2x8xbf16>
      %yf = glimmer.convert %y : tensor<2x8xbf16> to tensor<2x8xf32>
      %r = glimmer.add %h, %yf : tensor<2x8xf32>
    ```
    (under `policy=bf16` the norm reads a bf16 copy of `%h`, with its weight
    in bf16, and the add is bf16).
  }];
  let options = [
    Option<"functionName", "function", "std::string", /*default=*/"\"forward\"",
           "The forward function to rewrite">,
    Option<"policy", "policy", "std::string", /*default=*/"\"bf16\"",
           "bf16 (every op downstream of a parameter in bf16) or autocast "
           "(the precision of PyTorch's autocast)">,
  ];
  let dependentDialects = ["::glimmer::GlimmerDialect",
                           "::mlir::func::FuncDialect"];
}

def GlimmerAutodiff : Pass<"glimmer-autodiff", "::mlir::ModuleOp"> {
  let summary = "Builds the training step from the forward function";
  let description = [{
    Reverse-mode automatic differentiation on the global view. From
    `@forward` (a function returning a scalar floating-point loss, whose
    trainable parameters carry `glimmer.param`), it builds two functions:

    - `@grad_step`: same arguments as `@forward`; returns the loss and the
      gradient of every parameter the loss depends on (result attribute
      `glimmer.grad = "<name>"`). Gradients come from each op's
      `VJPOpInterface` rule, accumulated where values fan out.
    - `@apply_step`: takes, per differentiated parameter, the parameter, its
      gradient and the optimizer state, plus the 1-based step count; returns
      the global gradient norm (before clipping), then the updated
      parameters and states. With `max-norm > 0` gradients are scaled by
      `min(1, max_norm / (norm + 1e-6))` as `torch.nn.utils.clip_grad_norm_`.
      The optimizer is `adamw` or `sgd`, with torch.optim semantics.

    Parameters the loss does not depend on get no gradient and no update, as
    PyTorch's optimizers skip parameters whose `.grad` is None. Errors: no
    trainable parameter, a loss that is not a floating-point scalar, an op
    on a parameter's path to the loss that has no VJP rule.

    On a partitioned program, gradients of a loss marked `glimmer.partial =
    [axes]` are partial over the same axes, minus the axes that a sharded
    parameter's all_gather (whose VJP is a reduce_scatter) already sums: a
    parameter sharded over `["dp_shard", "cp"]` with a loss partial over
    `["dp_replicate", "dp_shard", "cp"]` gets a gradient partial over
    `["dp_replicate"]` only. The attribute `glimmer.sharded` of a sharded
    parameter goes to its gradient result and to its parameter, gradient
    and optimizer-state arguments and results of `@apply_step`, which then
    updates the rank's piece; the gradient norm sums a sharded gradient's
    squares over all the axes it is split over (`all_reduce` on `@mesh`)
    and counts replicated gradients once. Errors: a gathered
    parameter whose all_gather axes are not partial axes of the loss (the
    reduce_scatter would count a replicated loss once per rank), sharded
    parameters without `@mesh`.

    With pipeline stages (functions marked `glimmer.stage` by
    `glimmer-split-stages`), each stage `@stage_<s>` gets `@stage_<s>_grad`
    (and `@prologue`, `@prologue_grad`), and each pp rank `r` one
    `@apply_step_<r>` for the parameters of its stages `r, r + pp, ...`
    (and the prologue's on rank 0), instead: the backward recomputes the stage's
    forward from its arguments (so only the boundary activations are kept
    between a micro-batch's forward and backward); a stage before the last
    takes its results' cotangents as arguments `{glimmer.cotangent = i}`,
    the last seeds its loss; each returns (the loss, for the last) the
    cotangents of its activation arguments `{glimmer.activation_grad = i}`,
    then its parameters' gradients; stage 0's prologue arguments get
    cotangents `{glimmer.prologue_grad = i}`. The gradient norm of each
    rank's optimizer step sums the squares over `pp` (an `all_reduce`), so
    every rank clips with the global norm. A parameter several ranks hold
    (tied weights) has its gradient all-reduced over `pp` first, in name
    order on every rank (non-holders add zeros), and is counted in the
    norm by its first holder only.

    Before:
    ```mlir
    func.func @forward(%x: tensor<4xf32> {glimmer.input = "x"},
                       %w: tensor<4xf32> {glimmer.param = "w"}) -> tensor<f32> {
      %0 = glimmer.mul %x, %w : tensor<4xf32>
      %1 = glimmer.reduce sum %0 dims = [0] : tensor<4xf32> -> tensor<f32>
      return %1 : tensor<f32>
    }
    ```
    After (`optimizer=sgd lr=0.1`), besides `@forward`:
    ```mlir
    func.func @grad_step(%x: tensor<4xf32> {glimmer.input = "x"},
                         %w: tensor<4xf32> {glimmer.param = "w"})
        -> (tensor<f32>, tensor<4xf32> {glimmer.grad = "w"}) {
      ...
      return %loss, %dw : tensor<f32>, tensor<4xf32>
    }
    func.func @apply_step(%w: tensor<4xf32> {glimmer.param = "w"},
                          %dw: tensor<4xf32> {glimmer.grad = "w"},
                          %step: tensor<i64> {glimmer.step})
        -> (tensor<f32>, tensor<4xf32> {glimmer.param = "w"}) {
      ...
      %w1 = glimmer.sgd_update %w, %dw lr = 1.000000e-01 weight_decay = 0.000000e+00 : tensor<4xf32>
      return %norm, %w1 : tensor<f32>, tensor<4xf32>
    }
    ```
  }];
  let options = [
    Option<"functionName", "function", "std::string", /*default=*/"\"forward\"",
           "The forward function to differentiate">,
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"adamw\"",
           "adamw or sgd">,
    Option<"lr", "lr", "double", /*default=*/"1e-3", "Learning rate">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "AdamW beta2">,
    Option<"eps", "eps", "double", /*default=*/"1e-8", "AdamW epsilon">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"-1",
           "Weight decay (default: 0.01 for adamw, 0 for sgd, as torch.optim)">,
    Option<"maxNorm", "max-norm", "double", /*default=*/"0",
           "Clip the global gradient norm to this value (0: no clipping)">,
  ];
  let dependentDialects = ["::glimmer::GlimmerDialect",
                           "::mlir::func::FuncDialect"];
}

def GlimmerPrepareCpInputs
    : Pass<"glimmer-prepare-cp-inputs", "::mlir::ModuleOp"> {
  let summary = "Computes integer inputs on the full sequence, then permutes them for CP";
  let description = [{
    Context-parallel input preparation, in the global view. Everything the
    program derives from integer inputs on the full sequence (vision-bank
    indices, shifted labels, position ids, masks) is computed first, on the
    full sequence; where such a value enters the model's floating-point
    computation (embedding ids, vision-gather indices, RoPE and attention
    positions, cross-entropy labels, casts to float), it is reordered with
    the load-balancing `glimmer.cp_permute` of the recorded layout. Token
    order no longer matches tensor order afterwards, but every sequence value
    is permuted the same way and attention masks compare explicit positions,
    so the program computes the same loss (up to summation order).

    Which dimensions are the sequence is read off the ops' sharding rules
    from the token ids (the rank-2 integer argument feeding
    `glimmer.embedding`), never off sizes: every dimension of a value that
    is the token ids' sequence is permuted, and flattened batch-major
    tokens (`[B*T]`) are reshaped around the permutation. Splat constants
    are left alone (a permutation does not change them). With `cp = 1` the
    pass does nothing. Errors: no layout recorded, no token ids, a
    sequence length not divisible by the balancer's chunk count, an op
    that makes the batch and the sequence one index space, an op whose
    result depends on the tokens' order (a slice, padding, a concatenation
    or a cumulative sum along the sequence, a reshape that splits it,
    causal attention without positions: read off the ops' rules, a
    sequence dimension must be one factor that passes through or is
    summed, or one needed whole by an op blind to the order), and an
    argument along the sequence that is not computed from integer inputs
    (a learned per-position table, a float mask), which the permutation
    cannot reach.

    Before (`cp = 2`):
    ```mlir
    %idx = glimmer.vision_bank_indices %tokens image_token_id = 63 : tensor<2x16xi64>
    %e = glimmer.embedding %table, %tokens : tensor<64x32xf32>, tensor<2x16xi64> -> tensor<2x16x32xf32>
    %m = glimmer.vision_gather %e, %bank, %idx : tensor<2x16x32xf32>, tensor<12x32xf32>, tensor<2x16xi64>
    ```
    After:
    ```mlir
    %idx = glimmer.vision_bank_indices %tokens image_token_id = 63 : tensor<2x16xi64>
    %tp = glimmer.cp_permute %tokens dim = 1 cp = 2 balancer = head_tail : tensor<2x16xi64>
    %e = glimmer.embedding %table, %tp : tensor<64x32xf32>, tensor<2x16xi64> -> tensor<2x16x32xf32>
    %ip = glimmer.cp_permute %idx dim = 1 cp = 2 balancer = head_tail : tensor<2x16xi64>
    %m = glimmer.vision_gather %e, %bank, %ip : tensor<2x16x32xf32>, tensor<12x32xf32>, tensor<2x16xi64>
    ```
  }];
  let dependentDialects = ["::glimmer::GlimmerDialect"];
}

def GlimmerPrepareBatch : Pass<"glimmer-prepare-batch", "::mlir::ModuleOp"> {
  let summary = "Takes what needs the whole batch before it is split";
  let description = [{
    Runs on the global view before the batch or the sequence is split
    (`dp_replicate`, `dp_shard` or `cp` above 1, or `microbatches > 1` in the
    module's `glimmer.spmd`; otherwise it does nothing):

    - the loss is a mean over the valid tokens of the global batch, so a
      `cross_entropy` whose count is used gets the count of valid labels
      taken here, on the full labels (no collective later, and the same
      count in every micro-batch); its own count is left unused. The labels
      must be computed from integer inputs;
    - a `cross_entropy` of flattened tokens (`[B, T, V] -> [B*T, V]` and
      `[B, T] -> [B*T]`, as Hugging Face's loss reshapes them) is taken on
      the unflattened `[B, T, V]` and `[B, T]`: the same tokens, but a
      sequence split over `cp` inside a batch split over the data axes
      stays one split of each dimension;
    - with `microbatches = M > 1` the function gains an argument
      `tensor<i64> {glimmer.microbatch}` (the micro-batch the call
      computes, set by the runtime), and every value computed from integer
      inputs whose dimension 0 is the batch (or the flattened batch-major
      tokens) is cut to that micro-batch (`glimmer.microbatch_slice`) where
      it enters the model, so the model is compiled at the micro-batch's
      shape `B / M` while the integer inputs (vision-bank indices, shifted
      labels, positions, the count) are prepared on the whole batch.

    Errors: no token ids (a rank-2 integer argument read by
    `glimmer.embedding`), a batch the data-parallel degree does not divide,
    micro-batches that do not divide a data-parallel rank's samples, labels
    not computed from integer inputs.

    Before (`microbatches=2`):
    ```mlir
    func.func @forward(%tokens: tensor<2x8xi64>, %labels: tensor<2x8xi64>, ...) -> tensor<f32> {
      %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
      ...
      %lf = glimmer.reshape %logits : tensor<2x8x16xf32> -> tensor<16x16xf32>
      %lab = glimmer.reshape %labels : tensor<2x8xi64> -> tensor<16xi64>
      %sum, %count = glimmer.cross_entropy %lf, %lab ignore_index = -100 : tensor<16x16xf32>, tensor<16xi64> -> tensor<f32>, tensor<i64>
    ```
    After:
    ```mlir
    func.func @forward(%tokens: tensor<2x8xi64>, %labels: tensor<2x8xi64>, ...,
                       %mb: tensor<i64> {glimmer.microbatch}) -> tensor<f32> {
      %t = glimmer.microbatch_slice %tokens[%mb] pieces = 2 dim = 0 : tensor<2x8xi64>, tensor<i64> -> tensor<1x8xi64>
      %e = glimmer.embedding %table, %t : tensor<16x4xf32>, tensor<1x8xi64> -> tensor<1x8x4xf32>
      ...
      %valid = glimmer.compare ne, %labels, %ignore : tensor<2x8xi64>
      %n = glimmer.reduce sum ... dims = [0, 1] : tensor<2x8xi64> -> tensor<i64>
      %l = glimmer.microbatch_slice %labels[%mb] pieces = 2 dim = 0 : tensor<2x8xi64>, tensor<i64> -> tensor<1x8xi64>
      %sum, %count = glimmer.cross_entropy %logits, %l ignore_index = -100 : tensor<1x8x16xf32>, tensor<1x8xi64> -> tensor<f32>, tensor<i64>
    ```
  }];
  let dependentDialects = ["::glimmer::GlimmerDialect"];
}

def GlimmerSplitStages : Pass<"glimmer-split-stages", "::mlir::ModuleOp"> {
  let summary = "Cuts the forward into pipeline stages at decoder-layer "
                "boundaries";
  let description = [{
    With `pp > 1` in the module's `glimmer.spmd`, splits the (rank-local)
    `@forward` into `@stage_0` ... `@stage_{S-1}` (function attribute
    `glimmer.stage`), `S = pp * virtual_stages` (interleaved 1F1B runs the
    stages `r, r + pp, ...` on pp rank `r`). With `microbatches > 1` and no
    pipeline, the whole forward is one stage. The decoder layers are read off the graph: the
    parameters named `<prefix>.<N>.…` (the family with the most layers) that
    the computation after the token embedding reads, directly or through
    parameter-only work such as FSDP's all-gathers. Each value's depth is
    the highest decoder layer whose parameters it depends on; an op with a
    depth belongs to that layer's stage. The default cut balances a cost
    estimate (multiply-adds of GEMMs, attention and convolutions, elements
    elsewhere), with the work before the first layer counted on stage 0;
    `split=layers.4,layers.8` names the first layer of stages 1, 2, ...
    instead (a name that ends the layers' prefix, as torchtitan's split
    points read).

    Everything without a depth (integer preparation of the full batch, the
    vision encoder and projector, the token embedding, `vision_gather`, a
    final norm's FSDP-gathered weight) is placed on every stage that uses
    it and computed there from the data inputs, so the multimodal
    preparation is on stage 0, labels and the loss on the last stage, and
    each stage rebuilds its positions and masks instead of receiving them.
    Values with a depth that a later stage uses are the boundary ("cut")
    between stages: each stage takes the previous cut as arguments
    `{glimmer.activation = i}` (after the block arguments it reads, whose
    attributes it keeps) and returns its own cut, passing on values a later
    stage needs; the last stage returns `@forward`'s results. The runtime
    sends each cut to the next stage's ranks along `pp`. Parameters no
    stage reads stay arguments of stage 0, so the stages hold the whole
    state. Stage 0's trained work that no micro-batch changes (the vision
    encoder and projector on all images, whose rows every micro-batch reads
    by global bank index) becomes `@prologue` (attribute
    `glimmer.stage_prologue`), run once per step: stage 0 takes its results
    as arguments `{glimmer.prologue = i}` instead of encoding the images in
    every micro-batch's forward and again in its backward. `@forward` is
    kept.

    A parameter read on two stages (an output projection tied to the token
    embedding) is an argument of both, with its parameter-only work (FSDP
    gathers, casts) repeated on each; autodiff sums its gradients over
    `pp`.

    Errors: fewer decoder layers than stages, no decoder layers, split
    points that name no layer, are out of order or do not number the
    stages after the first, split points without `pp > 1`, and trained
    work on data inputs needed on two stages.

    Before (`pp=2`, two layers):
    ```mlir
    func.func @forward(%tok: tensor<2x8xi64> {glimmer.input = "tokens"},
                       %w0: tensor<8x8xf32> {glimmer.param = "layers.0.w"},
                       %w1: tensor<8x8xf32> {glimmer.param = "layers.1.w"}, ...) -> tensor<f32> {
      %e = glimmer.embedding %emb, %tok : ...
      %h0 = glimmer.linear %e, %w0 : ...
      %h1 = glimmer.linear %h0, %w1 : ...
      ...
    }
    ```
    After, besides `@forward`:
    ```mlir
    func.func @stage_0(%tok: ..., %emb: ..., %w0: ...) -> (tensor<2x8x8xf32> {glimmer.activation = 0 : i64})
        attributes {glimmer.stage = 0 : i64} {
      %e = glimmer.embedding %emb, %tok : ...
      %h0 = glimmer.linear %e, %w0 : ...
      return %h0 : tensor<2x8x8xf32>
    }
    func.func @stage_1(%labels: ..., %w1: ..., %h0: tensor<2x8x8xf32> {glimmer.activation = 0 : i64})
        -> tensor<f32> attributes {glimmer.stage = 1 : i64} {
      %h1 = glimmer.linear %h0, %w1 : ...
      ...
    }
    ```
  }];
  let options = [
    Option<"functionName", "function", "std::string", /*default=*/"\"forward\"",
           "The forward function to split">,
    Option<"split", "split", "std::string", /*default=*/"\"\"",
           "First decoder layer of each stage after the first "
           "(e.g. layers.4,layers.8); default: balanced by cost">,
  ];
  let dependentDialects = ["::glimmer::GlimmerDialect",
                           "::mlir::func::FuncDialect"];
}

def GlimmerShardParams : Pass<"glimmer-shard-params", "::mlir::ModuleOp"> {
  let summary = "FSDP: seeds parameter storage split over (dp_shard, cp)";
  let description = [{
    The storage seed of the sharding engine, between
    `glimmer-propagate-sharding` and `glimmer-partition`. With
    `dp_shard > 1`, every trainable parameter (a floating-point argument
    with `glimmer.param`) is held as this rank's piece over the group
    `dp_shard` x `cp`, as torchtitan's FSDP does: its `glimmer.sharding`
    (the split propagation gave it, the one it is computed with) becomes
    the storage split, with the group's axes added to dimension 0 (minor
    to `tp` where `tp` splits it, so each rank holds 1/(tp x group) of a
    tensor-parallel weight; a row-parallel weight is then split on both
    dimensions, as torchtitan's FSDP2 shards dimension 0 of a TP
    DTensor); a `glimmer.sharding_constraint` with the compute split goes
    before its first use. The partitioner's reshard then all-gathers the parameter
    there (not at entry: a runtime that frees values after their last use
    holds one full parameter at a time), and autodiff turns the all-gather
    into a reduce-scatter, so each rank receives the sum over the group of
    its piece's gradient, and the optimizer updates its piece. Scalars and
    parameters whose dimension is not divisible stay replicated; a remark
    lists them. A parameter whose sharding already uses the group's axes (a
    user's storage choice) is left as it is. Without `dp_shard` the pass
    does nothing.

    Before (`dp_shard = 2, cp = 2`):
    ```mlir
    func.func @forward(%x: tensor<8x32xf32>, %w: tensor<64x32xf32> {glimmer.param = "w"}) -> tensor<8x64xf32> {
      %y = glimmer.linear %x, %w : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
      return %y : tensor<8x64xf32>
    }
    ```
    After:
    ```mlir
    func.func @forward(%x: tensor<8x32xf32>,
                       %w: tensor<64x32xf32> {glimmer.param = "w",
                           glimmer.sharding = #glimmer.sharding<@mesh, [{"dp_shard", "cp"}, {} ]>}) -> tensor<8x64xf32> {
      %0 = glimmer.sharding_constraint %w <@mesh, [{}, {} ]> : tensor<64x32xf32>
      %y = glimmer.linear %x, %0 : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
      return %y : tensor<8x64xf32>
    }
    ```
    (`glimmer-partition` makes `%w` a `tensor<16x32xf32>` piece and the
    constraint an `all_gather` over `["dp_shard", "cp"]`.)
  }];
  let dependentDialects = ["::glimmer::GlimmerDialect"];
}

def GlimmerReducePartials : Pass<"glimmer-reduce-partials", "::mlir::ModuleOp"> {
  let summary = "Sums per-rank partial results inside the program";
  let description = [{
    Runs last, after partitioning and autodiff. A function result marked
    `glimmer.partial = [axes]` holds, on each rank, a partial sum over the
    named mesh axes (the loss of a rank's tokens, the gradients that loss
    gives every replicated parameter). This pass sums each such result once
    with a `glimmer.all_reduce` over exactly those axes and drops the marker,
    so every rank returns complete values: the loss and gradient norm each
    rank reports are the global ones, and each rank can run the optimizer on
    its own copy (or FSDP piece) of the parameters with no reduction outside
    the program. For a replicated parameter this is the single gradient
    reduction (of vision encoder and text parameters alike, over every
    token axis); a sharded parameter's gradient was already summed over its
    shard axes by a reduce_scatter and is reduced here only over what
    remains (`dp_replicate` under HSDP).

    Before (`cp = 2`):
    ```mlir
    func.func @grad_step(...) -> (tensor<f32> {glimmer.partial = ["cp"]},
                                  tensor<8x4xf32> {glimmer.grad = "w", glimmer.partial = ["cp"]}) {
      ...
      return %loss, %dw : tensor<f32>, tensor<8x4xf32>
    }
    ```
    After:
    ```mlir
    func.func @grad_step(...) -> (tensor<f32>, tensor<8x4xf32> {glimmer.grad = "w"}) {
      ...
      %0 = glimmer.all_reduce sum %loss on @mesh ["cp"] : tensor<f32>
      %1 = glimmer.all_reduce sum %dw on @mesh ["cp"] : tensor<8x4xf32>
      return %0, %1 : tensor<f32>, tensor<8x4xf32>
    }
    ```
  }];
  let dependentDialects = ["::glimmer::GlimmerDialect"];
}

def GlimmerNarrowGathers : Pass<"glimmer-narrow-gathers", "::mlir::ModuleOp"> {
  let summary = "Rounds before gathering what is only read rounded";
  let description = [{
    Runs after autodiff (in the post-autodiff pipeline), on every function
    of the module.
    Under mixed precision an FSDP parameter is stored as an f32 piece per
    rank; the partitioned program gathers it whole and then converts it to
    bf16 for the ops that read it. When every user of a `glimmer.all_gather`
    is a `glimmer.convert` to one narrower float type, each rank converts
    its piece instead and the gather moves the narrow values: rounding
    commutes with concatenation, so the same bits arrive, with half the
    bytes on the wire and no f32 copy of the whole parameter. Running after
    autodiff keeps the gathers' VJPs (the gradients' `reduce_scatter`s)
    in the parameters' type, f32, as PyTorch FSDP's mixed precision with an
    f32 `reduce_dtype` does. A gather whose value is also read as it is, or
    converted to several types, is left alone.

    Before:
    ```mlir
    %w = glimmer.all_gather %piece on @mesh ["dp_shard"] dim = 0
        : tensor<32x64xf32> -> tensor<64x64xf32>
    %wb = glimmer.convert %w : tensor<64x64xf32> to tensor<64x64xbf16>
    %y = glimmer.linear %x, %wb : tensor<8x64xbf16>, tensor<64x64xbf16> -> tensor<8x64xbf16>
    ```
    After:
    ```mlir
    %pb = glimmer.convert %piece : tensor<32x64xf32> to tensor<32x64xbf16>
    %wb = glimmer.all_gather %pb on @mesh ["dp_shard"] dim = 0
        : tensor<32x64xbf16> -> tensor<64x64xbf16>
    %y = glimmer.linear %x, %wb : tensor<8x64xbf16>, tensor<64x64xbf16> -> tensor<8x64xbf16>
    ```
  }];
  let dependentDialects = ["::glimmer::GlimmerDialect"];
}

def GlimmerNarrowGradients
    : Pass<"glimmer-narrow-gradients", "::mlir::ModuleOp"> {
  let summary = "Passes bf16 gradients to the optimizer without an f32 copy";
  let description = [{
    Runs after autodiff (and after `glimmer-reduce-partials`, so that every
    reduction of a gradient stays in the type it had). Under mixed precision
    a parameter is read through a `glimmer.convert` to bf16, so the last op
    on its gradient in `@grad_step` converts the bf16 cotangent back to
    f32. `glimmer.adamw_update`, `glimmer.sgd_update` and
    `glimmer.sum_squares` widen a bf16 gradient exactly themselves, so that
    convert is dropped: `@grad_step` returns the bf16 gradient and
    `@apply_step` takes it, when every use of the argument there is one of
    those. The update and the norm are the same bits; a kernel launch and
    an f32 copy of the gradient (held from the backward to the update) are
    saved. Programs whose micro-batches' gradients are summed between the
    two functions (`microbatches > 1`, pipeline stages) are left as they
    are.

    Before:
    ```mlir
    func.func @grad_step(...) -> (tensor<f32>, tensor<8x8xf32> {glimmer.grad = "w"}) {
      ...
      %dwf = glimmer.convert %dw : tensor<8x8xbf16> to tensor<8x8xf32>
      return %loss, %dwf : tensor<f32>, tensor<8x8xf32>
    }
    func.func @apply_step(%w: tensor<8x8xf32> {glimmer.param = "w"},
                          %g: tensor<8x8xf32> {glimmer.grad = "w"}, ...) {
      %n = glimmer.sum_squares %g : tensor<8x8xf32> -> tensor<f32>
      %p, %m, %v = glimmer.adamw_update %w, %g, ... : tensor<8x8xf32>, tensor<8x8xf32>, tensor<i64>
      ...
    }
    ```
    After:
    ```mlir
    func.func @grad_step(...) -> (tensor<f32>, tensor<8x8xbf16> {glimmer.grad = "w"}) {
      ...
      return %loss, %dw : tensor<f32>, tensor<8x8xbf16>
    }
    func.func @apply_step(%w: tensor<8x8xf32> {glimmer.param = "w"},
                          %g: tensor<8x8xbf16> {glimmer.grad = "w"}, ...) {
      %n = glimmer.sum_squares %g : tensor<8x8xbf16> -> tensor<f32>
      %p, %m, %v = glimmer.adamw_update %w, %g, ... : tensor<8x8xf32>, tensor<8x8xbf16>, tensor<i64>
      ...
    }
    ```
  }];
  let dependentDialects = ["::glimmer::GlimmerDialect"];
}

def GlimmerRematerialize : Pass<"glimmer-rematerialize", "::mlir::ModuleOp"> {
  let summary = "Recomputes cheap values where they are needed again";
  let description = [{
    Runs on the final rank-local functions, before fusion (training only;
    no CSE may follow, it would merge the copies back). A training step
    keeps forward values until the backward reads them; for a value that an
    elementwise op, an index op or `glimmer.rms_norm` computes from values
    the step keeps until then anyway, computing it again frees its buffer in
    between (each norm's output, the attention layout's transposes, the
    vision encoder's GELU). For each such op, over its uses in block order
    (its definition first), the widest gap of at least `min-gap` ops is
    found. When every operand is used at or after the use that ends the gap
    (so no operand lives longer), or is itself such a value (a chain,
    recomputed with it), and the recomputation reads no more elements of
    values of `min-elements` elements or more than it frees, a copy is
    placed right before that use, which with every later use reads the
    copy; an op whose uses all moved is erased (sunk to its first use).
    The bound keeps a product of two activations (the SwiGLU product),
    whose recomputation reads twice what it frees; it counts elements, not
    bytes, so that a mixed-precision norm (f32 input, bf16 result) is
    recomputed too: one pass over memory for half of it. A parameter's bf16 copy
    stays (the GEMMs of both passes read it). An FSDP parameter's
    `glimmer.all_gather` (of its piece, or of the piece's bf16 copy, which
    then stays) is recomputed the same way although it is not cheap: the
    backward gathers it again instead of holding the whole parameter
    between the passes, as FSDP's reshard-after-forward does. The copy is
    the same op on the same operands: results are bitwise unchanged.

    Before (`min-gap=2`):
    ```mlir
    %n = glimmer.rms_norm %x, %w eps = 1.0e-05 : tensor<8x64xbf16>, tensor<64xbf16>
    %q = glimmer.linear %n, %wq : ...
    ... // the rest of the forward, and the backward up to:
    %dwq = glimmer.matmul %dqT, %n : ...
    %dx, %dw = glimmer.rms_norm_grad %dn, %x, %w eps = 1.0e-05 : ...
    ```
    After:
    ```mlir
    %n = glimmer.rms_norm %x, %w eps = 1.0e-05 : tensor<8x64xbf16>, tensor<64xbf16>
    %q = glimmer.linear %n, %wq : ...
    ...
    %n2 = glimmer.rms_norm %x, %w eps = 1.0e-05 : tensor<8x64xbf16>, tensor<64xbf16>
    %dwq = glimmer.matmul %dqT, %n2 : ...
    %dx, %dw = glimmer.rms_norm_grad %dn, %x, %w eps = 1.0e-05 : ...
    ```
  }];
  let options = [
    Option<"minGap", "min-gap", "int64_t", /*default=*/"48",
           "Fewest ops between two uses worth a recomputation">,
    Option<"minElements", "min-elements", "int64_t", /*default=*/"65536",
           "Fewest elements of a value worth recomputing (and of a value "
           "whose reading counts)">,
  ];
  let dependentDialects = ["::glimmer::GlimmerDialect"];
}

def GlimmerActivationCheckpointing
    : Pass<"glimmer-activation-checkpointing", "::mlir::ModuleOp"> {
  let summary = "Recomputes each block's forward in its backward instead of "
                "keeping its activations";
  let description = [{
    Activation checkpointing on the training step, after autodiff: in each
    function that returns gradients (`@grad_step`, a pipeline stage's
    `@stage_<s>_grad`, `@prologue_grad`), the values a block's forward
    computes and its backward reads are computed again right before the
    backward instead of being held between the passes. Runs on the final
    rank-local functions, right before `glimmer-rematerialize` (no CSE may
    follow: it would merge the copies back).

    Blocks are read as `glimmer-outline-layers` reads them (the module path
    of each op's location up to its first numbered component: `layers.3`,
    `vision.layers.0`; constants count as no block's). A block's last
    segment in the function (a run of its ops, taking in runs of at most
    3 ops of no or another block) is its backward; its ops before that
    segment are its forward. A result of a forward op is *saved* when an op
    at or after the backward's first op reads it and no op of another block
    reads it before (a value another block reads, such as the residual
    stream a block passes on, is that block's input and stays).

    `mode` says which saved values are computed again:
    - `full`: all of them. What the block reads from before it (its inputs:
      the residual stream, parameters, positions) is all it keeps, as
      PyTorch's `checkpoint` of each block.
    - `selective`: all but the results of GEMMs (`linear`, `matmul`,
      `conv2d`), `attention` and collectives, which are kept (also where
      only a recomputation reads them), as torchtitan's selective policy
      keeps matmuls and attention.
    - `budget`: the saved values of the function's blocks are kept, most
      expensive to compute again (the cost `glimmer-split-stages` balances
      stages by) per byte first, collectives before anything, while their
      bytes (rank-local types) fit `budget`; the rest are computed again.
      `budget=0` is `full`; a budget of every saved byte keeps all.
    - `none`: nothing changes.

    A value is computed again by copies of the forward ops it depends on,
    back to values that are kept (inputs, kept results), placed right
    before the block's backward; its reads from there on read the copy.
    Only ops without regions that are free of memory effects, or are
    collectives (every rank runs the same copies), are copied; another
    op's results are kept. Programs have no random ops, so the copies
    compute the same bits. Collectives copied on GPUs reduce in NCCL's
    order, which may round differently.

    Errors: an unknown `mode`, `budget` without `mode=budget` or `budget`
    mode without a non-negative `budget`.

    Before (a block's norm and GEMM, whose backward reads both):
    ```mlir
    %n = glimmer.rms_norm %x, %g eps = 1.0e-05 : ... loc("layers.0.norm")
    %h = glimmer.linear %n, %w : ... loc("layers.0.w1")
    %s = glimmer.silu %h : ... loc("layers.0.act")
    ... // the rest of the forward, and the backward up to layer 0's:
    %sig = glimmer.sigmoid %h : ... loc("layers.0.act")
    ...
    %dw = glimmer.matmul %dhT, %n : ... loc("layers.0.w1")
    ```
    After (`mode=full`):
    ```mlir
    %n = glimmer.rms_norm %x, %g eps = 1.0e-05 : ... loc("layers.0.norm")
    %h = glimmer.linear %n, %w : ... loc("layers.0.w1")
    %s = glimmer.silu %h : ... loc("layers.0.act")
    ...
    %n2 = glimmer.rms_norm %x, %g eps = 1.0e-05 : ... loc("layers.0.norm")
    %h2 = glimmer.linear %n2, %w : ... loc("layers.0.w1")
    %sig = glimmer.sigmoid %h2 : ... loc("layers.0.act")
    ...
    %dw = glimmer.matmul %dhT, %n2 : ... loc("layers.0.w1")
    ```
    With `mode=selective`, only the norm is computed again (`%n2`); the
    backward reads the GEMM's `%h` as it is.
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"full\"",
           "none, full, selective or budget">,
    Option<"budget", "budget", "int64_t", /*default=*/"-1",
           "Bytes of saved activations each function may keep (mode=budget)">,
  ];
  let dependentDialects = ["::glimmer::GlimmerDialect"];
}

def GlimmerFuseResidualNorms
    : Pass<"glimmer-fuse-residual-norms", "::mlir::ModuleOp"> {
  let summary = "Fuses a residual add into the RMS norm that reads it";
  let description = [{
    Runs on the final rank-local functions, after autodiff and
    `glimmer-rematerialize`, before `glimmer-fuse-elementwise`. A
    `glimmer.rms_norm` whose input is a `glimmer.add` (the residual stream
    plus a block's output, in a pre-norm transformer) becomes one
    `glimmer.add_rms_norm` at the add, which returns the sum for the add's
    other users and the norm's result for the norm's: one kernel reads
    both addends and writes both results, where the add wrote the sum and
    the norm read it back. An addend that widens a narrower float exactly
    (a bf16 block output added to autocast's f32 stream) is read narrow,
    its convert dropped when nothing else reads it. Of several norms of one
    sum (a recomputation in the backward) the first takes the add; the
    rest read the sum. The fused op computes the same values in the same
    order, so results are bitwise unchanged. The fused op stands at the add
    when the norm's weight is defined by then, else at the norm when
    nothing else reads the sum before it (mixed precision converts the
    weight right before its norm); otherwise the pair is left alone.

    Before:
    ```mlir
    %hf = glimmer.convert %h : tensor<2x8x16xbf16> to tensor<2x8x16xf32>
    %s = glimmer.add %hf, %x : tensor<2x8x16xf32>
    %y = glimmer.rms_norm %s, %w eps = 1.0e-05 : tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xbf16>
    ```
    After:
    ```mlir
    %s, %y = glimmer.add_rms_norm %h, %x, %w eps = 1.0e-05
        : tensor<2x8x16xbf16>, tensor<2x8x16xf32>, tensor<16xf32>
          -> tensor<2x8x16xbf16>
    ```
  }];
  let dependentDialects = ["::glimmer::GlimmerDialect"];
}

def GlimmerSimplifyAttentionMasks
    : Pass<"glimmer-simplify-attention-masks", "::mlir::ModuleOp"> {
  let summary = "Drops attention positions that cannot change the mask";
  let description = [{
    Runs last, on the rank-local program after partitioning and autodiff. An
    attention's mask is a function of its positions and documents; two
    kinds of positions say nothing an index could not:

    * positions of non-causal attention without documents (they do not
      enter the mask at all);
    * causal positions that are, on both sides, the sequence index (a
      `glimmer.iota` along dimension 1 of `[B, T]`): key `j` is visible to
      query `i` iff `j <= i`, which is what causal attention without
      positions means.

    Both are dropped from `glimmer.attention` and `glimmer.attention_grad`
    (a window and blocks stay: with index positions they compare indices).
    A kernel then knows from the call alone that the mask is the plain
    (index-)causal one or none, and the CUDA backend runs those in cuDNN's
    fused flash attention (where the runtime enables it) instead of the
    position-masked kernels, with no look at the positions' data. Under context parallelism the positions are
    permuted (`glimmer.cp_permute`), so they are not an iota and stay.

    Before:
    ```mlir
    %pos = glimmer.iota dim = 1 : tensor<2x8xi64>
    %o, %lse = glimmer.attention %q, %k, %v
        positions(%pos, %pos : tensor<2x8xi64>, tensor<2x8xi64>) causal scale = 0.25
        : tensor<2x4x8x16xbf16>, tensor<2x2x8x16xbf16>
          -> tensor<2x4x8x16xbf16>, tensor<2x4x8xf32>
    ```
    After:
    ```mlir
    %o, %lse = glimmer.attention %q, %k, %v causal scale = 0.25
        : tensor<2x4x8x16xbf16>, tensor<2x2x8x16xbf16>
          -> tensor<2x4x8x16xbf16>, tensor<2x4x8xf32>
    ```
  }];
  let dependentDialects = ["::glimmer::GlimmerDialect"];
}

def GlimmerFoldKvRepeat : Pass<"glimmer-fold-kv-repeat", "::mlir::ModuleOp"> {
  let summary = "Grouped-query attention reads its key/value heads unrepeated";
  let description = [{
    Models with fewer key/value heads than query heads repeat each key/value
    head for its group of query heads before the attention: Hugging Face's
    `repeat_kv` on `[B, Hkv, T, D]`, or an expand and reshape on
    `[B, T, Hkv, D]` followed by the transpose to heads-first. Since
    `glimmer.attention` maps query head `h` to key/value head
    `h / (Hq / Hkv)` itself, the repeat only writes `Hq / Hkv` copies of the
    keys and values and, in the backward, sums them back; this pass makes
    the attention read the unrepeated heads (when key and value both are
    such repeats). Runs on the rank-local forward before autodiff, so the
    backward's key/value gradients have `Hkv` heads from the start.

    Before:
    ```mlir
    %k1 = glimmer.reshape %k : tensor<2x2x8x16xf32> -> tensor<2x2x1x8x16xf32>
    %k2 = glimmer.broadcast_in_dim %k1 dims = [0, 1, 2, 3, 4] : tensor<2x2x1x8x16xf32> -> tensor<2x2x2x8x16xf32>
    %kr = glimmer.reshape %k2 : tensor<2x2x2x8x16xf32> -> tensor<2x4x8x16xf32>
    (the same for %v into %vr)
    %o, %lse = glimmer.attention %q, %kr, %vr causal scale = 0.25
        : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
    ```
    After:
    ```mlir
    %o, %lse = glimmer.attention %q, %k, %v causal scale = 0.25
        : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
    ```
  }];
  let dependentDialects = ["::glimmer::GlimmerDialect"];
}

def GlimmerFoldAttentionTransposes
    : Pass<"glimmer-fold-attention-transposes", "::mlir::ModuleOp"> {
  let summary = "Attention reads and writes [B, T, H, D] tensors in place";
  let description = [{
    A projection's output split into heads is `[B, T, H, D]`, attention's
    operands `[B, H, T, D]`: models transpose in between and back after the
    output, and the backward transposes the gradients alike, each transpose
    moving a whole activation through memory (77 per step of the medium
    benchmark model at T = 32768, 2.2 ms). This pass drops them: a query,
    key or value that is a transpose exchanging dimensions 1 and 2 is read
    from the transpose's input, and an output that such a transpose reads is
    written sequence-major, both marked in `sequence_major`. In
    `glimmer.attention_grad`, an operand flips with its gradient (when the
    operand comes from such a transpose and the gradient only goes into
    them) and the output with the output gradient (when both come from
    them), so no transpose is traded for another; a user that still needs
    the head-major output gets one transpose back, which the backward's
    fold then drops.

    Only attention that the CUDA backend runs in cuDNN's fused kernels is
    rewritten (bf16, without positions, documents, blocks or window; runs
    after `glimmer-simplify-attention-masks` has dropped index positions):
    other attention runs kernels that read head-major tensors, for which
    the runtime transposes the flagged tensors itself, so folding there
    would only move the transposes.

    Before:
    ```mlir
    %q = glimmer.transpose %qs permutation = [0, 2, 1, 3] : tensor<1x8x4x16xbf16> -> tensor<1x4x8x16xbf16>
    %k = glimmer.transpose %ks permutation = [0, 2, 1, 3] : tensor<1x8x2x16xbf16> -> tensor<1x2x8x16xbf16>
    %v = glimmer.transpose %vs permutation = [0, 2, 1, 3] : tensor<1x8x2x16xbf16> -> tensor<1x2x8x16xbf16>
    %o, %lse = glimmer.attention %q, %k, %v causal scale = 0.25
        : tensor<1x4x8x16xbf16>, tensor<1x2x8x16xbf16> -> tensor<1x4x8x16xbf16>, tensor<1x4x8xf32>
    %os = glimmer.transpose %o permutation = [0, 2, 1, 3] : tensor<1x4x8x16xbf16> -> tensor<1x8x4x16xbf16>
    ```
    After:
    ```mlir
    %os, %lse = glimmer.attention %qs, %ks, %vs causal scale = 0.25
        {sequence_major = array<i1: true, true, true, true>}
        : tensor<1x8x4x16xbf16>, tensor<1x8x2x16xbf16> -> tensor<1x8x4x16xbf16>, tensor<1x4x8xf32>
    ```
  }];
  let dependentDialects = ["::glimmer::GlimmerDialect"];
}

def GlimmerFuseElementwise
    : Pass<"glimmer-fuse-elementwise", "::mlir::ModuleOp"> {
  let summary = "Groups elementwise and index ops into glimmer.fusion ops";
  let description = [{
    Runs last, on the final rank-local functions (forward, backward and
    optimizer step alike). Walking each function from its end, an op that a
    fusion body may hold (`glimmer.fusion`'s list: elementwise arithmetic,
    math functions and conversions on floating-point values, and the index
    ops `reshape`, `transpose`, `broadcast_in_dim`, `slice`, `concat`,
    `pad`) starts a group that takes in its producers of the same kinds:

    * a producer whose every use is in the group is computed inside it and
      never stored;
    * a producer also used outside becomes a further result, when it has
      the group's shape and all its outside uses come after the group's last
      op (the fusion takes that op's place, so no use moves before its
      definition);
    * a producer whose result has under a quarter of the group's elements
      stays outside: read through a broadcast, it would be computed again
      for every element it is broadcast to, rather than once.
    * otherwise, a producer used outside too that is cheap to compute again
      (an index op or a conversion: RoPE's broadcast tables, read by the
      forward and the backward) is copied into the group and stays for its
      other users; it goes once they are all in fusions.

    A group needs two ops that are not `reshape` (a reshape is a view) and
    holds at most 64 ops and 16 inputs (the kernel's parameters and
    registers). The values are those of the ops run one by one: each op still
    rounds to its result type.

    Then two fusions of one shape that read a common operand of that shape
    (SwiGLU's backward: both of its results read the output gradient and the
    gate projection) become one fusion with the results of both, at the
    first one's place, so the operand is read once: when the second one's
    inputs are all defined there, at most four ops other than reshapes lie
    between them (the second one's results are computed that much earlier),
    and the limits above hold for the union.

    Before:
    ```mlir
    %g = glimmer.linear %x, %wg : tensor<8x16xbf16>, tensor<32x16xbf16> -> tensor<8x32xbf16>
    %u = glimmer.linear %x, %wu : tensor<8x16xbf16>, tensor<32x16xbf16> -> tensor<8x32xbf16>
    %s = glimmer.silu %g : tensor<8x32xbf16>
    %h = glimmer.mul %s, %u : tensor<8x32xbf16>
    ```
    After:
    ```mlir
    %h = glimmer.fusion (%g, %u) : (tensor<8x32xbf16>, tensor<8x32xbf16>) -> tensor<8x32xbf16> {
    ^bb0(%a: tensor<8x32xbf16>, %b: tensor<8x32xbf16>):
      %s = glimmer.silu %a : tensor<8x32xbf16>
      %h = glimmer.mul %s, %b : tensor<8x32xbf16>
      glimmer.yield %h : tensor<8x32xbf16>
    }
    ```
  }];
  let dependentDialects = ["::glimmer::GlimmerDialect"];
}

def GlimmerMultiTensor : Pass<"glimmer-multi-tensor", "::mlir::ModuleOp"> {
  let summary = "Gathers per-parameter updates and casts into multi-tensor ops";
  let description = [{
    Runs after `glimmer-fuse-elementwise`, on the final functions. In each
    function:

    * the `glimmer.adamw_update`s that share a step, a `grad_scale` and
      hyperparameters (an optimizer step's updates of every parameter)
      become one `glimmer.adamw_update_list` in place of the last of them,
      when no result of the others is used before it;
    * the `glimmer.convert`s of the function's arguments to one element
      type (the bf16 copy of each parameter in a mixed-precision step)
      become one `glimmer.convert_list` in place of the first of them.

    Each result keeps its bits; on a GPU the medium training step makes two
    or three launches for its 148 updates and one for its 150 casts instead
    of one each. A cast made earlier holds its result from the start of the
    function: in a training step each parameter's copy is kept for the
    backward anyway.

    Before:
    ```mlir
    %a = glimmer.convert %w0 : tensor<4x8xf32> to tensor<4x8xbf16>
    ...
    %b = glimmer.convert %w1 : tensor<8xf32> to tensor<8xbf16>
    ```
    After:
    ```mlir
    %c:2 = glimmer.convert_list %w0, %w1 : tensor<4x8xf32>, tensor<8xf32> to tensor<4x8xbf16>, tensor<8xbf16>
    ```
  }];
  let dependentDialects = ["::glimmer::GlimmerDialect"];
}

def GlimmerOutlineLayers : Pass<"glimmer-outline-layers", "::mlir::ModuleOp"> {
  let summary = "Turns repeated layers into calls of one function per kind";
  let description = [{
    Runs last, on the final functions. Each op carries the module path the
    importer gave it (`layers.3.attention.wq`); its layer is that path up to
    the first numbered component (`layers.3`, `vision.layers.0`). In each
    public function, a segment is a maximal run of one layer's ops (taking
    in runs of at most `max-foreign` ops of no or another layer between two
    of its own: values computed once and placed among a layer's ops), of at
    least `min-ops` ops. Segments that compute the same thing on their own
    inputs (the same ops, attributes and types, reading their inputs, the
    values they use from before them, at the same positions) become calls
    of one private function `@<function>_layer<k>` cloned from the first:
    its arguments are those inputs, its results every value of the segment
    that any of them uses after it. A model's layers of one kind, in the
    forward, the backward and the recomputation, each become one function
    called once per layer; layers that differ (a sliding-window layer beside
    a global one) get one function per kind. Every op runs as before, in
    the same order, so results keep their bits; the generated C++ and its
    build no longer grow with depth. A value a call reads stays alive until
    the call returns.

    Before:
    ```mlir
    %h1 = glimmer.linear %h0, %w0 : ... loc("layers.0.wq")
    %a1 = glimmer.silu %h1 : ... loc("layers.0.act")
    %h2 = glimmer.linear %a1, %w1 : ... loc("layers.1.wq")
    %a2 = glimmer.silu %h2 : ... loc("layers.1.act")
    ```
    After (with `min-ops=2`):
    ```mlir
    %a1 = call @grad_step_layer0(%h0, %w0) : (...) -> tensor<...>
    %a2 = call @grad_step_layer0(%a1, %w1) : (...) -> tensor<...>
    ...
    func.func private @grad_step_layer0(%arg0: tensor<...>, %arg1: tensor<...>) -> tensor<...> {
      %0 = glimmer.linear %arg0, %arg1 : ...
      %1 = glimmer.silu %0 : ...
      return %1 : tensor<...>
    }
    ```
  }];
  let options = [
    Option<"minOps", "min-ops", "unsigned", /*default=*/"8",
           "Fewest ops a segment needs to be outlined">,
    Option<"maxForeign", "max-foreign", "unsigned", /*default=*/"3",
           "Most ops of no or another layer a segment takes in between two "
           "runs of its own">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def GlimmerSeedSharding : Pass<"glimmer-seed-sharding", "::mlir::ModuleOp"> {
  let summary = "Seeds the token splits and the tensor-parallel plan";
  let description = [{
    Phase 1 of the sharding engine: writes the seeds that
    `glimmer-propagate-sharding` carries through the program.

    **Token splits** (`dp_replicate`, `dp_shard` or `cp` above 1): every
    value computed from integer inputs (the token ids, vision-bank indices,
    shifted labels, positions, a folded per-position table) is computed
    whole on every rank; where the model reads it (`glimmer.embedding`'s
    ids, `glimmer.vision_gather`'s indices, the queries' positions, the
    labels, a cast to float) it gets a `glimmer.sharding_constraint` marked
    `glimmer.token_split` that splits its batch over the data-parallel axes
    and its sequence over `cp`. Which dimensions are the batch and the
    sequence is read off the ops' sharding rules from the token ids, never
    off sizes. Attention's key positions and document ids are not split:
    the keys span the whole sequence. An op that makes the batch and the
    sequence one index space is an error.

    **Tensor parallelism** (`tp > 1`): writes `glimmer.sharding` on the
    weights (and biases) of `glimmer.linear` ops that the plan makes
    column-parallel (weight rows, i.e. output features, split over `tp`)
    or row-parallel (weight columns split).

    The default plan is derived from the graph, so an imported model needs
    no annotations: a linear is column-parallel when its output reaches an
    attention query, key or value (through reshapes, transposes, slices and
    elementwise work such as RoPE whose other operands come from the same
    projection or from no projection at all), or the input of another linear
    through elementwise work (the MLP's up/gate projections, gated by each
    other). Row-parallel weights (attention output, MLP down) are not
    seeded: propagation splits their columns from the split activations.
    The output projection (its output reaches `cross_entropy`) is split over
    the vocabulary, and so is the token embedding (a parameter table read
    with ids from a data input): glimmer-partition makes them vocab-parallel
    with a loss-parallel cross-entropy. Key/value projections with fewer
    heads than `tp` (a multiple of them) stay replicated, and their heads
    are repeated to `tp` before the attention unless the model repeats them.

    `tp-plan=FILE` replaces the default with a JSON object mapping glob
    patterns over state_dict names to `"colwise"`, `"rowwise"` or
    `"replicate"` (the first matching pattern decides; on an embedding
    table, rowwise splits the vocabulary and colwise the hidden features; a
    pattern that matches no linear weight or embedding table is an error):
    ```json
    {"layers.*.attention.w[qkv].weight": "colwise",
     "layers.*.attention.wo.weight": "rowwise"}
    ```

    With `sp` (sequence parallelism) it also writes
    `glimmer.sharding_constraint`s marked `glimmer.sequence_parallel`: the
    residual stream — the result of each add that takes a row-parallel
    projection's output (the first projection a column-parallel one's
    output reaches) — split along the sequence over `tp` (minor to `cp`,
    and with the batch over the data axes, when those split the tokens),
    and each column-parallel projection's input whole over `tp`. The
    residual stream is found from the plan rather than from norm ops, which
    many models spell out.

    Errors name the parameter and what to change: output features, heads
    or a vocabulary that `tp` does not divide.

    Before (`dp_shard=2,cp=2,tp=2`):
    ```mlir
    %t = glimmer.cp_permute %tokens dim = 1 cp = 2 balancer = head_tail : tensor<2x16xi64>
    %e = glimmer.embedding %table, %t : tensor<64x32xf32>, tensor<2x16xi64> -> tensor<2x16x32xf32>
    %q = glimmer.linear %x, %wq : tensor<2x16x32xf32>, tensor<32x32xf32> -> tensor<2x16x32xf32>
    %q1 = glimmer.reshape %q : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
    ```
    After:
    ```mlir
    func.func @forward(..., %wq: tensor<32x32xf32> {glimmer.param = "wq",
        glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {} ]>}, ...)
    %t = glimmer.cp_permute %tokens dim = 1 cp = 2 balancer = head_tail : tensor<2x16xi64>
    %ts = glimmer.sharding_constraint %t <@mesh, [{"dp_shard"}, {"cp"} ]> {glimmer.token_split} : tensor<2x16xi64>
    %e = glimmer.embedding %table, %ts : tensor<64x32xf32>, tensor<2x16xi64> -> tensor<2x16x32xf32>
    ```
  }];
  let options = [
    Option<"tpPlan", "tp-plan", "std::string", /*default=*/"\"\"",
           "JSON file mapping state_dict name patterns to colwise/rowwise/replicate">,
  ];
  let dependentDialects = ["::glimmer::GlimmerDialect"];
}

def GlimmerPartition : Pass<"glimmer-partition", "::mlir::ModuleOp"> {
  let summary = "Turns the propagated shardings into a per-rank program";
  let description = [{
    Phase 3 of the sharding engine, for every mesh axis but `pp` (tensor
    parallelism with or without `sp`, data parallelism, FSDP and context
    parallelism alike). Every value takes the local type of its propagated
    sharding; each operand is brought to the sharding the op's rule expects
    (from the op's factor axes) by one reshard: partial sums are
    all-reduced (reduce-scattered where the target is split over their
    axes), a split that moves between dimensions is an all-to-all, axes a
    dimension is split over beyond what the target keeps are all-gathered,
    axes the target adds are cut locally (`local_shard`, whose VJP is the
    all-gather). So attention's keys and values are all-gathered over `cp`
    (its rule needs the keys' sequence whole), an FSDP parameter over
    `dp_shard` x `cp` at its first use, and a token split seed is a local
    cut of a value every rank holds.

    Over `tp` an operand replicated over axes that split the op's work (the
    input of a column-parallel projection) gets a `glimmer.pvary`, whose
    VJP sums the ranks' shares of its cotangent. Over the token axes
    (`dp_replicate`, `dp_shard`, `cp`) each rank's loss is its tokens'
    share: the cross-entropy's sum is a partial sum over them, which may
    only be scaled (`div` by the global count, `mul`, `neg`, `convert`,
    sums of such losses), and the function result is marked
    `glimmer.partial = [axes]` (`glimmer-reduce-partials` sums it once,
    after autodiff); their gathers' VJPs always sum, and no pvary is needed.
    Errors: any other reduction across a token-split dimension, a loss not
    split over every token axis, a value computed from trained parameters
    cut along a token-split dimension.

    Other function results leave complete and replicated. Sharded
    arguments become the rank's piece, described by `glimmer.sharded` (the
    same `#glimmer.sharding`, one entry per dimension: a TP x FSDP weight
    is split on two), which the runtime cuts from the full weights and
    reassembles for checkpoints. Handlers rewrite three ops: a
    row-parallel linear's bias is added once to the complete sum, in the
    layout each use wants (under `sp` after the reduce-scatter, to the
    rank's tokens); an embedding whose table is split by rows makes its ids
    local and masks the other ranks' rows (a partial sum); a cross-entropy
    whose logits are split over the vocabulary combines the ranks' maxima,
    sums of exponentials and label logits (loss-parallel, no full logits on
    any rank). Sharding constraints are erased once their operands are
    resharded.

    Before (`tp=2`, after glimmer-propagate-sharding):
    ```mlir
    func.func @mlp(%x: tensor<8x32xf32>,
                   %w1: tensor<64x32xf32> {glimmer.param = "w1", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {} ]>},
                   %w2: tensor<32x64xf32> {glimmer.param = "w2", glimmer.sharding = #glimmer.sharding<@mesh, [{}, {"tp"} ]>}) -> tensor<8x32xf32> {
      %h = glimmer.linear %x, %w1 {glimmer.shardings = [#glimmer.sharding<@mesh, [{}, {"tp"} ]>]} : ...
      %y = glimmer.linear %h, %w2 {glimmer.shardings = [#glimmer.sharding<@mesh, [{}, {} ], partial = ["tp"]>]} : ...
      return %y : tensor<8x32xf32>
    }
    ```
    After:
    ```mlir
    func.func @mlp(%x: tensor<8x32xf32>,
                   %w1: tensor<32x32xf32> {glimmer.param = "w1", glimmer.sharded = #glimmer.sharding<@mesh, [{"tp"}, {} ]>},
                   %w2: tensor<32x32xf32> {glimmer.param = "w2", glimmer.sharded = #glimmer.sharding<@mesh, [{}, {"tp"} ]>}) -> tensor<8x32xf32> {
      %0 = glimmer.pvary %x on @mesh ["tp"] : tensor<8x32xf32>
      %h = glimmer.linear %0, %w1 : tensor<8x32xf32>, tensor<32x32xf32> -> tensor<8x32xf32>
      %y = glimmer.linear %h, %w2 : tensor<8x32xf32>, tensor<32x32xf32> -> tensor<8x32xf32>
      %1 = glimmer.all_reduce sum %y on @mesh ["tp"] : tensor<8x32xf32>
      return %1 : tensor<8x32xf32>
    }
    ```
  }];
  let dependentDialects = ["::glimmer::GlimmerDialect"];
}

def GlimmerPopulateShardingRules
    : Pass<"glimmer-populate-sharding-rules", "::mlir::func::FuncOp"> {
  let summary = "Attaches each op's sharding rule, for inspection and tests";
  let description = [{
    Writes the rule of every op implementing `ShardingRuleOpInterface` as a
    `glimmer.sharding_rule` string attribute, and checks it against the op's
    types (every operand and result covered, each dimension's factors
    multiplying to its size). Factors are named `i, j, k, ...`; a compound
    dimension prints as `(i,j)` (major to minor), a size-1 dimension as `1`.

    Before:
    ```mlir
    %y = glimmer.linear %x, %w : tensor<2x16x32xf32>, tensor<64x32xf32> -> tensor<2x16x64xf32>
    ```
    After:
    ```mlir
    %y = glimmer.linear %x, %w {glimmer.sharding_rule = "([i, j, k], [l, k]) -> ([i, j, l]) {i=2, j=16, k=32, l=64} reduction={k}"}
        : tensor<2x16x32xf32>, tensor<64x32xf32> -> tensor<2x16x64xf32>
    ```
  }];
  let dependentDialects = ["::glimmer::GlimmerDialect"];
}

def GlimmerPropagateSharding
    : Pass<"glimmer-propagate-sharding", "::mlir::ModuleOp"> {
  let summary = "Propagates shardings through the ops' sharding rules to a fixed point";
  let description = [{
    Phase 2 of the sharding engine. Starts from the seeds, in priority order:
    the results of the user's `glimmer.sharding_constraint`s, then arguments
    marked `glimmer.param`/`glimmer.buffer` with a `glimmer.sharding` (the
    TP plan), then the sequence-parallel constraints
    (`glimmer.sequence_parallel`: after the parameter plan, so the residual
    stream's split never displaces the plan inside a block; they name the
    token axes as well), then the token splits (`glimmer.token_split`
    constraints: before the sequence-parallel ones, their sequence split
    would reach the residual stream first and keep `tp` out of it), then
    the other arguments with one;
    each round runs to a fixed point before the next adds its seeds, so a
    higher-priority sharding is never overridden by a lower one. Parameters
    and buffers without a seed are open (a row-parallel weight gets its
    split from the activations it multiplies); other arguments without one
    (the data inputs, bound whole by the runtime) stay replicated.

    Through each op it uses only the op's sharding rule: the axes of an
    operand or result dimension are assigned to that dimension's factors
    (major to minor, each axis dividing what is left of its factor), and
    every other dimension built from those factors is sharded the same way,
    forward and backward. Need-replication factors are never sharded; a
    sharded reduction factor makes the results partial over its axes. A
    value's sharding only grows (a replicated dimension may become split, a
    split one never changes), so the iteration terminates; where two
    operands disagree on a factor the first keeps it and the other will be
    resharded when the program is partitioned (`report-conflicts` emits a
    remark for each).

    The result: `glimmer.shardings` (one `#glimmer.sharding` per result) on
    every op with a sharded result, `glimmer.sharding` on function
    arguments and results. Needs `@mesh` (glimmer-materialize-mesh). With a
    recorded layout that splits nothing but pipeline stages it does
    nothing. Values computed from integer inputs alone stay replicated
    (every rank prepares them on the full batch; the token-split seeds cut
    them where the model reads them).

    Before (column-parallel then row-parallel, the MLP of a block):
    ```mlir
    func.func @mlp(%x: tensor<8x32xf32>,
                   %w1: tensor<64x32xf32> {glimmer.param = "w1", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {} ]>},
                   %w2: tensor<32x64xf32> {glimmer.param = "w2", glimmer.sharding = #glimmer.sharding<@mesh, [{}, {"tp"} ]>}) -> tensor<8x32xf32> {
      %h = glimmer.linear %x, %w1 : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
      %a = glimmer.silu %h : tensor<8x64xf32>
      %y = glimmer.linear %a, %w2 : tensor<8x64xf32>, tensor<32x64xf32> -> tensor<8x32xf32>
      return %y : tensor<8x32xf32>
    }
    ```
    After:
    ```mlir
      %h = glimmer.linear %x, %w1 {glimmer.shardings = [#glimmer.sharding<@mesh, [{}, {"tp"} ]>]} ...
      %a = glimmer.silu %h {glimmer.shardings = [#glimmer.sharding<@mesh, [{}, {"tp"} ]>]} ...
      %y = glimmer.linear %a, %w2 {glimmer.shardings = [#glimmer.sharding<@mesh, [{}, {} ], partial = ["tp"]>]} ...
    ```
  }];
  let options = [
    Option<"reportConflicts", "report-conflicts", "bool", /*default=*/"false",
           "Emit a remark where a value's sharding disagrees with the op's choice">,
  ];
  let dependentDialects = ["::glimmer::GlimmerDialect"];
}

#endif // GLIMMER_DIALECT_GLIMMER_TRANSFORMS_PASSES_TD
