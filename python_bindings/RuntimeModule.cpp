//===- RuntimeModule.cpp - Python bindings for the runtime kernels --------===//
//
// `glimmer._runtime`: the runtime's Tensor and every kernel of Kernels.h, for
// testing the kernels against PyTorch.
//
//   import numpy as np
//   from glimmer import _runtime as rt
//   y = rt.softmax(np.random.rand(2, 8), 1).numpy()
//
// Tensors convert from any object with the buffer protocol (numpy arrays of
// float64, float32, float16, int64, int32, int16, int8, uint8, bool) and
// export the buffer protocol themselves (`np.asarray(t)` is a view,
// `t.numpy()` a copy). Kernel arguments accept numpy arrays directly; absent
// optional operands are None. The buffer protocol is used instead of the
// numpy C API so the module does not depend on numpy's ABI.
//
// Viewing a GPU tensor through the buffer protocol (np.asarray) moves it to
// the host, and a bf16 tensor is converted to f32 first: numpy has no bf16.
//
// RuntimeError from a kernel surfaces as glimmer._runtime.Error, a subclass
// of ValueError, carrying the kernel's message.
//
//===----------------------------------------------------------------------===//

#include "glimmer_rt/Kernels.h"
#include "glimmer_rt/Tensor.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <cstring>
#include <memory>
#include <optional>

namespace py = pybind11;
using namespace glimmer_rt;

namespace {

/// The buffer-protocol format of a dtype ("" when none).
std::string formatOf(DType t) {
  switch (t) {
  case DType::F64:
    return py::format_descriptor<double>::format();
  case DType::F32:
    return py::format_descriptor<float>::format();
  case DType::F16:
    return "e";
  case DType::I64:
    return py::format_descriptor<int64_t>::format();
  case DType::I32:
    return py::format_descriptor<int32_t>::format();
  case DType::I16:
    return py::format_descriptor<int16_t>::format();
  case DType::I8:
    return py::format_descriptor<int8_t>::format();
  case DType::U8:
    return py::format_descriptor<uint8_t>::format();
  case DType::Bool:
    return "?";
  case DType::BF16:
    return "";
  }
  return "";
}

/// The dtype of a buffer-protocol format and item size.
DType dtypeOfBuffer(const py::buffer_info &info) {
  std::string f = info.format;
  // Strip a native byte-order/alignment prefix.
  if (!f.empty() && (f[0] == '@' || f[0] == '=' || f[0] == '<'))
    f = f.substr(1);
  if (f.size() == 1) {
    char c = f[0];
    size_t n = size_t(info.itemsize);
    if (c == 'd' && n == 8)
      return DType::F64;
    if (c == 'f' && n == 4)
      return DType::F32;
    if (c == 'e' && n == 2)
      return DType::F16;
    if (c == '?' && n == 1)
      return DType::Bool;
    if ((c == 'q' || c == 'l' || c == 'i' || c == 'h' || c == 'b') &&
        (n == 8 || n == 4 || n == 2 || n == 1))
      return n == 8   ? DType::I64
             : n == 4 ? DType::I32
             : n == 2 ? DType::I16
                      : DType::I8;
    if (c == 'B' && n == 1)
      return DType::U8;
  }
  throw py::value_error("unsupported buffer format '" + info.format +
                        "' (itemsize " + std::to_string(info.itemsize) +
                        ") for a runtime tensor");
}

/// Copies a (possibly strided) buffer into a new Tensor.
Tensor tensorFromBuffer(const py::buffer &b) {
  py::buffer_info info = b.request();
  DType dtype = dtypeOfBuffer(info);
  Shape shape(info.shape.begin(), info.shape.end());
  Tensor t(dtype, shape);
  int64_t n = t.numel();
  if (n == 0)
    return t;
  size_t es = dtypeSize(dtype);
  const char *src = static_cast<const char *>(info.ptr);
  char *dst = static_cast<char *>(t.raw());
  // Row-major walk over the source with its byte strides.
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t off = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      off += idx[d] * int64_t(info.strides[d]);
    std::memcpy(dst + size_t(k) * es, src + off, es);
    for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
      if (++idx[size_t(d)] < shape[size_t(d)])
        break;
      idx[size_t(d)] = 0;
    }
  }
  return t;
}

Tensor opt(const std::optional<Tensor> &t) { return t ? *t : Tensor(); }

/// Attention's `layout` keyword: (query, key, value, output) sequence-major.
using LayoutFlags = std::array<bool, 4>;

AttentionLayout attentionLayout(const LayoutFlags &f) {
  return {f[0], f[1], f[2], f[3]};
}

// Kernels run without the GIL: they never touch Python objects, so ranks
// simulated as Python threads run concurrently.
const py::call_guard<py::gil_scoped_release> nogil{};

/// Devices, the process-wide GPU settings and the allocator.
void bindDevices(py::module &m) {
  m.def("built_with_cuda", &builtWithCuda,
        "Whether the runtime has its CUDA backend");
  m.def("cuda_device_count", &cudaDeviceCount, "Visible CUDA devices");
  m.def("set_allow_tf32", &glimmer_rt::setAllowTf32, py::arg("allow"),
        "Whether f32 GEMMs on GPUs may use TF32 tensor cores (process-wide; "
        "off by default)");
  m.def("allow_tf32", &glimmer_rt::allowTf32);
  m.def(
      "set_current_device",
      [](const std::string &device) {
        // Ops without tensor operands (full, constant, iota) create their
        // result on the calling thread's current device.
        static thread_local std::unique_ptr<DeviceScope> scope;
        Device d;
        if (!parseDevice(device, d))
          throw py::value_error("unknown device '" + device + "'");
        scope.reset();
        scope = std::make_unique<DeviceScope>(d);
      },
      py::arg("device"), "Sets the calling thread's current device");

  m.def("allocator_stats", []() {
    AllocatorStats s = allocatorStats();
    py::dict d;
    d["allocations"] = s.allocations;
    d["reuses"] = s.reuses;
    d["cached_bytes"] = s.cachedBytes;
    return d;
  });
  m.def("empty_cache", &glimmer_rt::emptyCache);
}

/// The enums kernels take.
void bindEnums(py::module &m) {
  py::enum_<DType> dtypes(m, "DType");
  for (DType d : glimmer::kAllDTypes)
    dtypes.value(std::string(glimmer::dtypeEnumerator(d)).c_str(), d);
  py::enum_<Reduction>(m, "Reduction")
      .value("Sum", Reduction::Sum)
      .value("Max", Reduction::Max)
      .value("Min", Reduction::Min);
  py::enum_<CompareDir>(m, "CompareDir")
      .value("EQ", CompareDir::EQ)
      .value("NE", CompareDir::NE)
      .value("LT", CompareDir::LT)
      .value("LE", CompareDir::LE)
      .value("GT", CompareDir::GT)
      .value("GE", CompareDir::GE);
  py::enum_<RopeStyle>(m, "RopeStyle")
      .value("Interleaved", RopeStyle::Interleaved)
      .value("Half", RopeStyle::Half);
  py::enum_<Balancer>(m, "Balancer")
      .value("HeadTail", Balancer::HeadTail)
      .value("Contiguous", Balancer::Contiguous);
}

/// Tensor and its numpy conversions.
void bindTensor(py::module &m) {
  py::class_<Tensor>(m, "Tensor", py::buffer_protocol(), R"doc(
A runtime tensor. Construct from a numpy array (copied); np.asarray(t) views
it, t.numpy() copies it.)doc")
      .def(py::init(&tensorFromBuffer), py::arg("array"))
      .def_buffer([](Tensor &t) -> py::buffer_info {
        // An exception here would terminate the process (the buffer
        // protocol cannot report errors through pybind11), so what has no
        // host buffer is made to have one: an undefined tensor views as an
        // empty f32 array, a GPU tensor moves to the host and a bf16 one
        // becomes f32 (this object is changed accordingly).
        if (!t.defined())
          return py::buffer_info(nullptr, sizeof(float),
                                 py::format_descriptor<float>::format(), 1,
                                 {ssize_t(0)}, {ssize_t(sizeof(float))});
        if (t.isCuda())
          t = t.to(Device::cpu());
        if (formatOf(t.dtype()).empty())
          t = convert(t, DType::F32);
        std::string format = formatOf(t.dtype());
        ssize_t es = ssize_t(dtypeSize(t.dtype()));
        std::vector<ssize_t> shape(t.shape().begin(), t.shape().end());
        std::vector<ssize_t> strides(shape.size());
        ssize_t s = es;
        for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
          strides[size_t(d)] = s;
          s *= shape[size_t(d)];
        }
        return py::buffer_info(t.raw(), es, format, ssize_t(shape.size()),
                               shape, strides);
      })
      .def_property_readonly("dtype", &Tensor::dtype)
      .def_property_readonly("shape",
                             [](const Tensor &t) {
                               py::tuple s(t.shape().size());
                               for (size_t i = 0; i < t.shape().size(); ++i)
                                 s[i] = t.shape()[i];
                               return s;
                             })
      .def_property_readonly("defined", &Tensor::defined)
      .def("numel", &Tensor::numel)
      .def("item", &Tensor::item, py::arg("i") = 0)
      .def("view", &Tensor::view, py::arg("shape"))
      .def("clone", &Tensor::clone)
      .def("describe", &Tensor::describe)
      .def_property_readonly("device",
                             [](const Tensor &t) { return t.device().str(); })
      .def(
          "to",
          [](const Tensor &t, const std::string &device) {
            Device d;
            if (!parseDevice(device, d))
              throw py::value_error("unknown device '" + device +
                                    "' (cpu, cuda or cuda:N)");
            return t.to(d);
          },
          py::arg("device"), "This tensor on `device` (a copy unless there)")
      .def("__repr__",
           [](const Tensor &t) { return "<glimmer_rt " + t.describe() + ">"; })
      .def("numpy", [](py::object self) {
        return py::module_::import("numpy").attr("array")(self);
      });
  py::implicitly_convertible<py::buffer, Tensor>();

  m.def("from_numpy", &tensorFromBuffer, py::arg("array"),
        "Copies a numpy array into a runtime Tensor.");
  m.def("to_numpy", [](py::object t) {
    return py::module_::import("numpy").attr("array")(t);
  });
}

/// Creation, elementwise, reduction and shape kernels.
void bindElementwiseKernels(py::module &m) {
  // Creation.
  m.def("full", &glimmer_rt::full, nogil, py::arg("dtype"), py::arg("shape"),
        py::arg("value"));
  m.def("constant", &glimmer_rt::constant, nogil, py::arg("dtype"),
        py::arg("shape"), py::arg("values"));
  m.def("iota", &glimmer_rt::iota, nogil, py::arg("dtype"), py::arg("shape"),
        py::arg("dim"));

  // Elementwise.
  m.def("neg", &glimmer_rt::neg, nogil);
  m.def("exp", &glimmer_rt::exp, nogil);
  m.def("log", &glimmer_rt::log, nogil);
  m.def("sqrt", &glimmer_rt::sqrt, nogil);
  m.def("rsqrt", &glimmer_rt::rsqrt, nogil);
  m.def("tanh", &glimmer_rt::tanh, nogil);
  m.def("erf", &glimmer_rt::erf, nogil);
  m.def("sigmoid", &glimmer_rt::sigmoid, nogil);
  m.def("silu", &glimmer_rt::silu, nogil);
  m.def("relu", &glimmer_rt::relu, nogil);
  m.def("sin", &glimmer_rt::sin, nogil);
  m.def("cos", &glimmer_rt::cos, nogil);
  m.def("tan", &glimmer_rt::tan, nogil);
  m.def("asin", &glimmer_rt::asin, nogil);
  m.def("acos", &glimmer_rt::acos, nogil);
  m.def("atan", &glimmer_rt::atan, nogil);
  m.def("sinh", &glimmer_rt::sinh, nogil);
  m.def("cosh", &glimmer_rt::cosh, nogil);
  m.def("asinh", &glimmer_rt::asinh, nogil);
  m.def("acosh", &glimmer_rt::acosh, nogil);
  m.def("atanh", &glimmer_rt::atanh, nogil);
  m.def("expm1", &glimmer_rt::expm1, nogil);
  m.def("log1p", &glimmer_rt::log1p, nogil);
  m.def("abs", &glimmer_rt::abs, nogil);
  m.def("floor", &glimmer_rt::floor, nogil);
  m.def("ceil", &glimmer_rt::ceil, nogil);
  m.def("trunc", &glimmer_rt::trunc, nogil);
  m.def("round", &glimmer_rt::round, nogil);
  m.def("gelu", &glimmer_rt::gelu, nogil, py::arg("x"),
        py::arg("tanh_approximation") = false);
  m.def("add", &glimmer_rt::add, nogil);
  m.def("sub", &glimmer_rt::sub, nogil);
  m.def("mul", &glimmer_rt::mul, nogil);
  m.def("div", &glimmer_rt::div, nogil);
  m.def("max", &glimmer_rt::max, nogil);
  m.def("min", &glimmer_rt::min, nogil);
  m.def("pow", &glimmer_rt::pow, nogil);
  m.def("compare", &glimmer_rt::compare, nogil, py::arg("dir"), py::arg("a"),
        py::arg("b"));
  m.def("select", &glimmer_rt::select, nogil, py::arg("cond"), py::arg("a"),
        py::arg("b"));
  m.def("convert", &glimmer_rt::convert, nogil, py::arg("x"), py::arg("dtype"));
  m.def("convert_list", &glimmer_rt::convertList, nogil, py::arg("inputs"),
        py::arg("dtype"));

  // Reductions and scans.
  m.def("reduce", &glimmer_rt::reduce, nogil, py::arg("kind"), py::arg("x"),
        py::arg("dims"), py::arg("keep_dims") = false);
  m.def("cumsum", &glimmer_rt::cumsum, nogil, py::arg("x"), py::arg("dim"));
  m.def("argsort", &glimmer_rt::argsort, nogil, py::arg("x"), py::arg("dim"),
        py::arg("descending") = false);
  // The result's type defaults to the first input's.
  m.def(
      "sum_squares",
      [](const std::vector<glimmer_rt::Tensor> &inputs,
         std::optional<glimmer_rt::DType> dtype) {
        glimmer_rt::DType result =
            dtype ? *dtype
                  : (inputs.empty() ? glimmer_rt::DType::F32
                                    : inputs.front().dtype());
        return glimmer_rt::sumSquares(inputs, result);
      },
      nogil, py::arg("inputs"), py::arg("dtype") = std::nullopt);
  m.def("softmax", &glimmer_rt::softmax, nogil, py::arg("x"), py::arg("dim"));
  m.def("softmax_grad", &glimmer_rt::softmaxGrad, nogil, py::arg("grad"),
        py::arg("y"), py::arg("dim"));

  // Shapes.
  m.def("reshape", &glimmer_rt::reshape, nogil, py::arg("x"), py::arg("shape"));
  m.def("transpose", &glimmer_rt::transpose, nogil, py::arg("x"),
        py::arg("perm"));
  m.def("broadcast_in_dim", &glimmer_rt::broadcastInDim, nogil, py::arg("x"),
        py::arg("shape"), py::arg("dims"));
  m.def("slice", &glimmer_rt::slice, nogil, py::arg("x"), py::arg("start"),
        py::arg("limit"), py::arg("stride"));
  m.def("microbatch_slice", &glimmer_rt::microbatchSlice, nogil, py::arg("x"),
        py::arg("index"), py::arg("pieces"), py::arg("dim"));
  m.def("concat", &glimmer_rt::concat, nogil, py::arg("inputs"),
        py::arg("dim"));
  m.def("pad", &glimmer_rt::pad, nogil, py::arg("x"), py::arg("low"),
        py::arg("high"), py::arg("value"));
}

/// The model ops' kernels, multimodal and context-parallel ones.
void bindModelKernels(py::module &m) {
  // Model ops.
  m.def("embedding", &glimmer_rt::embedding, nogil, py::arg("table"),
        py::arg("ids"));
  m.def("embedding_grad", &glimmer_rt::embeddingGrad, nogil, py::arg("grad"),
        py::arg("ids"), py::arg("num_embeddings"));
  m.def(
      "check_indices",
      [](const Tensor &ids, int64_t bound, std::optional<int64_t> ignore,
         const std::string &op) {
        return glimmer_rt::checkIndices(ids, bound, ignore.has_value(),
                                        ignore.value_or(0), op.c_str());
      },
      nogil, py::arg("ids"), py::arg("bound"),
      py::arg("ignore_index") = std::nullopt, py::arg("op") = "embedding");
  m.def(
      "linear",
      [](const Tensor &x, const Tensor &w, std::optional<Tensor> bias) {
        return linear(x, w, opt(bias));
      },
      nogil, py::arg("x"), py::arg("w"), py::arg("bias") = py::none());
  m.def("matmul", &glimmer_rt::matmul, nogil, py::arg("a"), py::arg("b"),
        py::arg("transpose_a") = false, py::arg("transpose_b") = false);
  m.def("rms_norm", &glimmer_rt::rmsNorm, nogil, py::arg("x"), py::arg("w"),
        py::arg("eps"), py::arg("dtype") = std::nullopt);
  m.def("add_rms_norm", &glimmer_rt::addRmsNorm, nogil, py::arg("lhs"),
        py::arg("rhs"), py::arg("w"), py::arg("eps"),
        py::arg("dtype") = std::nullopt);
  m.def("rms_norm_grad", &glimmer_rt::rmsNormGrad, nogil, py::arg("grad"),
        py::arg("x"), py::arg("w"), py::arg("eps"));
  m.def("layer_norm", &glimmer_rt::layerNorm, nogil, py::arg("x"), py::arg("w"),
        py::arg("b"), py::arg("eps"), py::arg("dtype") = std::nullopt);
  m.def("layer_norm_grad", &glimmer_rt::layerNormGrad, nogil, py::arg("grad"),
        py::arg("x"), py::arg("w"), py::arg("eps"));
  m.def("rope", &glimmer_rt::rope, nogil, py::arg("x"), py::arg("positions"),
        py::arg("theta"), py::arg("style"), py::arg("inverse") = false);
  m.def(
      "attention",
      [](const Tensor &q, const Tensor &k, const Tensor &v,
         std::optional<Tensor> qPos, std::optional<Tensor> kPos,
         std::optional<Tensor> qDoc, std::optional<Tensor> kDoc,
         std::optional<Tensor> qBlk, std::optional<Tensor> kBlk, bool causal,
         int64_t window, double scale, const LayoutFlags &layout) {
        return attention(q, k, v, opt(qPos), opt(kPos), opt(qDoc), opt(kDoc),
                         opt(qBlk), opt(kBlk), causal, window, scale,
                         attentionLayout(layout));
      },
      nogil, py::arg("q"), py::arg("k"), py::arg("v"),
      py::arg("q_positions") = py::none(), py::arg("k_positions") = py::none(),
      py::arg("q_documents") = py::none(), py::arg("k_documents") = py::none(),
      py::arg("q_blocks") = py::none(), py::arg("k_blocks") = py::none(),
      py::arg("causal") = false, py::arg("window") = 0, py::arg("scale") = 1.0,
      py::arg("layout") = LayoutFlags{});
  m.def(
      "attention_grad",
      [](const Tensor &grad, const Tensor &q, const Tensor &k, const Tensor &v,
         const Tensor &out, const Tensor &lse, std::optional<Tensor> qPos,
         std::optional<Tensor> kPos, std::optional<Tensor> qDoc,
         std::optional<Tensor> kDoc, std::optional<Tensor> qBlk,
         std::optional<Tensor> kBlk, bool causal, int64_t window, double scale,
         const LayoutFlags &layout) {
        return attentionGrad(grad, q, k, v, out, lse, opt(qPos), opt(kPos),
                             opt(qDoc), opt(kDoc), opt(qBlk), opt(kBlk), causal,
                             window, scale, attentionLayout(layout));
      },
      nogil, py::arg("grad"), py::arg("q"), py::arg("k"), py::arg("v"),
      py::arg("out"), py::arg("lse"), py::arg("q_positions") = py::none(),
      py::arg("k_positions") = py::none(), py::arg("q_documents") = py::none(),
      py::arg("k_documents") = py::none(), py::arg("q_blocks") = py::none(),
      py::arg("k_blocks") = py::none(), py::arg("causal") = false,
      py::arg("window") = 0, py::arg("scale") = 1.0,
      py::arg("layout") = LayoutFlags{});
  m.def("cross_entropy", &glimmer_rt::crossEntropy, nogil, py::arg("logits"),
        py::arg("labels"), py::arg("ignore_index") = -100,
        py::arg("sum_dtype") = DType::F32);
  m.def("cross_entropy_grad", &glimmer_rt::crossEntropyGrad, nogil,
        py::arg("grad"), py::arg("logits"), py::arg("labels"),
        py::arg("ignore_index") = -100);
  m.def(
      "conv2d",
      [](const Tensor &x, const Tensor &w, std::optional<Tensor> bias,
         const std::vector<int64_t> &stride,
         const std::vector<int64_t> &padding) {
        return conv2d(x, w, opt(bias), stride, padding);
      },
      nogil, py::arg("x"), py::arg("w"), py::arg("bias") = py::none(),
      py::arg("stride") = std::vector<int64_t>{1, 1},
      py::arg("padding") = std::vector<int64_t>{0, 0});
  m.def("conv2d_grad", &glimmer_rt::conv2dGrad, nogil, py::arg("grad"),
        py::arg("x"), py::arg("w"),
        py::arg("stride") = std::vector<int64_t>{1, 1},
        py::arg("padding") = std::vector<int64_t>{0, 0});

  // Multimodal.
  m.def("vision_bank_indices", &glimmer_rt::visionBankIndices, nogil,
        py::arg("tokens"), py::arg("image_token_id"));
  m.def("vision_gather", &glimmer_rt::visionGather, nogil, py::arg("embeds"),
        py::arg("bank"), py::arg("indices"));
  m.def("vision_gather_grad", &glimmer_rt::visionGatherGrad, nogil,
        py::arg("grad"), py::arg("indices"), py::arg("bank_rows"));

  // Context parallelism.
  m.def("cp_permute", &glimmer_rt::cpPermute, nogil, py::arg("x"),
        py::arg("dim"), py::arg("cp"), py::arg("balancer") = Balancer::HeadTail,
        py::arg("inverse") = false);
}

/// The optimizer updates.
void bindOptimizers(py::module &m) {
  // Python's updates are functional: a Python object's tensor is the sole
  // handle on its storage, which the kernels would update in place
  // (glimmer_rt::replacing), so each takes its state by value: a second
  // handle, and the caller's tensors keep their values. The list variant's
  // vectors already hold copies.
  m.def(
      "adamw_update",
      [](Tensor param, const Tensor &grad, Tensor expAvg, Tensor expAvgSq,
         const Tensor &step, double lr, double beta1, double beta2,
         double eps, double weightDecay, const Tensor &gradScale) {
        return glimmer_rt::adamwUpdate(param, grad, expAvg, expAvgSq, step,
                                       lr, beta1, beta2, eps, weightDecay,
                                       gradScale);
      },
      nogil, py::arg("param"),
        py::arg("grad"), py::arg("exp_avg"), py::arg("exp_avg_sq"),
        py::arg("step"), py::arg("lr"), py::arg("beta1"), py::arg("beta2"),
        py::arg("eps"), py::arg("weight_decay"),
        py::arg("grad_scale") = glimmer_rt::Tensor());
  // The new params, then the new exp_avgs, then the new exp_avg_sqs.
  m.def("adamw_update_list", &glimmer_rt::adamwUpdateList, nogil,
        py::arg("params"), py::arg("grads"), py::arg("exp_avgs"),
        py::arg("exp_avg_sqs"), py::arg("step"), py::arg("lr"),
        py::arg("beta1"), py::arg("beta2"), py::arg("eps"),
        py::arg("weight_decay"), py::arg("grad_scale") = glimmer_rt::Tensor());
  m.def(
      "sgd_update",
      [](Tensor param, const Tensor &grad, double lr, double weightDecay,
         const Tensor &gradScale) {
        return glimmer_rt::sgdUpdate(param, grad, lr, weightDecay, gradScale);
      },
      nogil, py::arg("param"),
        py::arg("grad"), py::arg("lr"), py::arg("weight_decay"),
        py::arg("grad_scale") = glimmer_rt::Tensor());
}

} // namespace

PYBIND11_MODULE(_runtime, m) {
  // cuDNN attention crashes while building its plan inside Python
  // processes (glimmer_rt::setCudnnAttention says more): off here.
  glimmer_rt::setCudnnAttention(false);
  m.doc() = "Glimmer runtime tensors and CPU kernels (for testing)";

  py::register_exception<RuntimeError>(m, "Error", PyExc_ValueError);
  bindDevices(m);
  bindEnums(m);
  bindTensor(m);
  bindElementwiseKernels(m);
  bindModelKernels(m);
  bindOptimizers(m);
}
