//===- ExportArchiveTest.cpp - The torch.export archive reader ------------===//
//
// Archives written here with LibTorch's PyTorchStreamWriter from a small
// model JSON, edited per test, so that each schema rule and error is checked
// on its own. (test/Import/export-archive.test reads archives that
// torch.export.save wrote.)
//
//===----------------------------------------------------------------------===//

#include "glimmer/Import/ExportArchive.h"

#include <caffe2/serialize/inline_container.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <limits>
#include <unistd.h>

using namespace glimmer::pt2;
using json = nlohmann::json;

namespace {

/// A JSON list. Lists are built with this: nlohmann/json reads a brace list
/// of two-element lists whose first is a string as an object.
json list(std::initializer_list<json> items) {
  json out = json::array();
  for (const json &item : items)
    out.push_back(item);
  return out;
}

json tensorMeta(json sizes, json strides) {
  return json::object({{"dtype", 7},
                       {"sizes", sizes},
                       {"requires_grad", false},
                       {"device", {{"type", "cpu"}, {"index", nullptr}}},
                       {"strides", strides},
                       {"storage_offset", {{"as_int", 0}}},
                       {"layout", 7}});
}

json tensorArg(const char *name) {
  return json::object({{"as_tensor", {{"name", name}}}});
}

json namedArg(const char *name, json arg, int kind) {
  return json::object({{"name", name}, {"arg", arg}, {"kind", kind}});
}

/// x * w, x of size [s0, 2], w a parameter; the node's arguments
/// cover the scalar kinds.
json modelJson() {
  json symbolic =
      json::object({{"as_expr",
                     {{"expr_str", "Symbol('s0', positive=True, integer=True)"},
                      {"hint", {{"as_int", 3}}}}}});
  json two = json::object({{"as_int", 2}});
  json one = json::object({{"as_int", 1}});
  json symInts = list({json::object({{"as_name", "n"}}), two});
  json optionalTensors =
      list({json::object({{"as_none", true}}), tensorArg("x")});
  json node = json::object(
      {{"target", "torch.ops.aten.mul.Tensor"},
       {"name", "mul"},
       {"inputs",
        list(
            {namedArg("self", tensorArg("x"), 1),
             namedArg("other", tensorArg("p_w"), 1),
             namedArg("alpha", {{"as_float", "-Infinity"}}, 2),
             namedArg("sizes", {{"as_sym_ints", symInts}}, 1),
             namedArg("indices", {{"as_optional_tensors", optionalTensors}}, 1),
             namedArg("device",
                      {{"as_device", {{"type", "cuda"}, {"index", 1}}}}, 2)})},
       {"outputs", list({tensorArg("mul")})},
       {"metadata",
        {{"stack_trace", "File \"m.py\", line 3, in forward"},
         {"nn_module_stack",
          "L__self__,,m.M;L__self___blocks_0,blocks[0],m.Block"},
         {"torch_fn", "mul_1;method_descriptor.mul"}}}});
  json graph = json::object(
      {{"inputs", list({tensorArg("p_w"), tensorArg("x")})},
       {"outputs", list({tensorArg("mul")})},
       {"nodes", list({node})},
       {"tensor_values",
        {{"p_w", tensorMeta(list({two}), list({one}))},
         {"x", tensorMeta(list({symbolic, two}), list({two, one}))},
         {"mul", tensorMeta(list({symbolic, two}), list({two, one}))}}},
       {"sym_int_values", {{"n", symbolic}}},
       {"sym_bool_values", json::object()}});
  json parameter = json::object(
      {{"parameter", {{"arg", {{"name", "p_w"}}}, {"parameter_name", "w"}}}});
  json userInput = json::object({{"user_input", {{"arg", tensorArg("x")}}}});
  json userOutput =
      json::object({{"user_output", {{"arg", tensorArg("mul")}}}});
  json signature = json::object({{"input_specs", list({parameter, userInput})},
                                 {"output_specs", list({userOutput})}});
  return json::object(
      {{"graph_module",
        {{"graph", graph},
         {"signature", signature},
         {"module_call_graph", json::array()}}},
       {"opset_version", {{"aten", 10}}},
       {"range_constraints", {{"s0", {{"min_val", 2}, {"max_val", nullptr}}}}},
       {"schema_version", {{"major", 8}, {"minor", 17}}}});
}

/// w: a [2] float32 view at storage offset 1, stride 2, of `storage`.
json weightsConfig() {
  json meta = tensorMeta(list({json::object({{"as_int", 2}})}),
                         list({json::object({{"as_int", 2}})}));
  meta["storage_offset"] = json::object({{"as_int", 1}});
  json w = json::object({{"path_name", "weight_0"},
                         {"is_param", true},
                         {"use_pickle", false},
                         {"tensor_meta", meta}});
  return json::object({{"config", {{"w", w}}}});
}

std::vector<float> storage() { return {0, 10, 20, 30, 40}; }

/// The archives a test wrote, removed after it.
std::vector<std::string> written;

class ExportArchive : public testing::Test {
protected:
  void TearDown() override {
    for (const std::string &path : written)
      std::remove(path.c_str());
    written.clear();
  }
};

/// Writes an archive holding `model` and the weights config, and returns
/// its path (unique to the process: test runs may share the directory).
std::string writeArchive(const std::string &name, const json &model,
                         const json &weights = weightsConfig(),
                         const std::vector<float> &weight = storage()) {
  std::string path = testing::TempDir() + "glimmer-export-" +
                     std::to_string(getpid()) + "-" + name + ".pt2";
  written.push_back(path);
  caffe2::serialize::PyTorchStreamWriter writer(path);
  auto write = [&](const std::string &record, const std::string &data) {
    writer.writeRecord(record, data.data(), data.size());
  };
  write("archive_format", "pt2");
  write("archive_version", "0");
  write("byteorder", "little");
  write("models/model.json", model.dump());
  write("data/weights/model_weights_config.json", weights.dump());
  write("data/constants/model_constants_config.json",
        json::object({{"config", json::object()}}).dump());
  write("data/weights/weight_0",
        std::string(reinterpret_cast<const char *>(weight.data()),
                    weight.size() * sizeof(float)));
  writer.writeEndOfFile();
  return path;
}

/// The error of reading `path`, or "" when it reads.
std::string readError(const std::string &path) {
  llvm::Expected<ExportedProgram> program = readExportArchive(path);
  return program ? "" : llvm::toString(program.takeError());
}

TEST_F(ExportArchive, ReadsTheSchema) {
  llvm::Expected<ExportedProgram> program =
      readExportArchive(writeArchive("reads", modelJson()));
  ASSERT_TRUE(bool(program)) << llvm::toString(program.takeError());
  EXPECT_EQ(program->schemaMajor, 8);
  EXPECT_EQ(program->schemaMinor, 17);
  ASSERT_EQ(program->inputSpecs.size(), 2u);
  EXPECT_EQ(program->inputSpecs[0].kind, InputSpec::Parameter);
  EXPECT_EQ(program->inputSpecs[0].name, "p_w");
  EXPECT_EQ(program->inputSpecs[0].target, "w");
  EXPECT_EQ(program->inputSpecs[1].kind, InputSpec::UserInput);
  EXPECT_EQ(program->inputSpecs[1].value.kind, ArgKind::Tensor);

  const TensorMeta *x = program->graph.getTensor("x");
  ASSERT_TRUE(x);
  EXPECT_EQ(x->dtype, ScalarType::Float);
  ASSERT_EQ(x->sizes.size(), 2u);
  EXPECT_TRUE(x->sizes[0].isSymbolic());
  EXPECT_EQ(x->sizes[0].getSymbolName(), "s0");
  EXPECT_EQ(x->sizes[0].hint, 3);
  EXPECT_FALSE(x->sizes[1].isSymbolic());
  EXPECT_EQ(x->sizes[1].value, 2);
  EXPECT_EQ(program->rangeConstraints.at("s0").min, 2);
  EXPECT_FALSE(program->rangeConstraints.at("s0").max);
  EXPECT_EQ(program->graph.symIntValues.at("n").getSymbolName(), "s0");

  ASSERT_EQ(program->graph.nodes.size(), 1u);
  const Node &node = program->graph.nodes[0];
  EXPECT_EQ(node.target, "torch.ops.aten.mul.Tensor");
  EXPECT_EQ(node.inputs[0].arg.get<std::string>(), "x");
  EXPECT_EQ(node.inputs[0].passing, Passing::Positional);
  EXPECT_EQ(node.inputs[2].passing, Passing::Keyword);
  EXPECT_EQ(node.inputs[2].arg.get<double>(),
            -std::numeric_limits<double>::infinity());
  const auto &sizes = node.inputs[3].arg.get<std::vector<SymIntArg>>();
  ASSERT_EQ(sizes.size(), 2u);
  EXPECT_EQ(sizes[0].name, "n");
  EXPECT_FALSE(sizes[1].isSymbolic());
  EXPECT_EQ(sizes[1].value, 2);
  const auto &indices =
      node.inputs[4].arg.get<std::vector<std::optional<std::string>>>();
  EXPECT_EQ(indices, (std::vector<std::optional<std::string>>{
                         std::nullopt, std::string("x")}));
  EXPECT_EQ(node.inputs[5].arg.get<Device>().type, "cuda");
  EXPECT_EQ(node.inputs[5].arg.get<Device>().index, 1);
  EXPECT_EQ(node.stackTrace, "File \"m.py\", line 3, in forward");
  ASSERT_EQ(node.nnModuleStack.size(), 2u);
  EXPECT_EQ(node.nnModuleStack[1].path, "blocks[0]");
  EXPECT_EQ(node.nnModuleStack[1].type, "m.Block");
  EXPECT_EQ(node.metadata.at("torch_fn"), "mul_1;method_descriptor.mul");

  const Payload &w = program->weights.at("w");
  EXPECT_EQ(w.record, "data/weights/weight_0");
  EXPECT_EQ(w.recordBytes, 5 * sizeof(float));
  EXPECT_TRUE(w.isParam);
}

TEST_F(ExportArchive, ReadsAStridedPayload) {
  llvm::Expected<ExportedProgram> program =
      readExportArchive(writeArchive("payload", modelJson()));
  ASSERT_TRUE(bool(program)) << llvm::toString(program.takeError());
  llvm::Expected<TensorData> w = readExportPayload(*program, "w");
  ASSERT_TRUE(bool(w)) << llvm::toString(w.takeError());
  EXPECT_EQ(w->dtype, ScalarType::Float);
  EXPECT_EQ(w->sizes, std::vector<int64_t>{2});
  ASSERT_EQ(w->bytes.size(), 2 * sizeof(float));
  float values[2];
  std::memcpy(values, w->bytes.data(), sizeof(values));
  EXPECT_EQ(values[0], 10);
  EXPECT_EQ(values[1], 30);
}

TEST_F(ExportArchive, RefusesAPayloadPastItsRecord) {
  std::string path = writeArchive("short", modelJson(), weightsConfig(),
                                  std::vector<float>{0, 10, 20});
  llvm::Expected<ExportedProgram> program = readExportArchive(path);
  ASSERT_TRUE(bool(program)) << llvm::toString(program.takeError());
  llvm::Expected<TensorData> w = readExportPayload(*program, "w");
  ASSERT_FALSE(bool(w));
  EXPECT_EQ(llvm::toString(w.takeError()),
            "'" + path +
                "' weight 'w' needs 4 elements of float32 but its record "
                "'data/weights/weight_0' has 12 bytes");
}

TEST_F(ExportArchive, AcceptsANewerMinorVersion) {
  json model = modelJson();
  model["schema_version"]["minor"] = 99;
  model["graph_module"]["graph"]["a_field_from_the_future"] = 1;
  EXPECT_EQ(readError(writeArchive("minor", model)), "");
}

/// Each edit of the model JSON, and the error it gives (after
/// "'<path>' has a malformed models/model.json: ").
struct SchemaCase {
  const char *name;
  void (*edit)(json &);
  const char *error;
};

json &node0(json &m) { return m["graph_module"]["graph"]["nodes"][0]; }

const SchemaCase kSchemaCases[] = {
    {"union_two_members",
     [](json &m) { node0(m)["inputs"][1]["arg"]["as_int"] = 1; },
     "expected one member (a union), got 2 at "
     "'graph_module.graph.nodes[0].inputs[1].arg'"},
    {"unsupported_kind",
     [](json &m) {
       node0(m)["inputs"][2]["arg"] =
           json::object({{"as_complex", {{"real", 1}, {"imag", 0}}}});
     },
     "unsupported argument kind 'as_complex' at "
     "'graph_module.graph.nodes[0].inputs[2].arg'"},
    {"unknown_dtype",
     [](json &m) {
       m["graph_module"]["graph"]["tensor_values"]["x"]["dtype"] = 99;
     },
     "unknown scalar type 99 at 'graph_module.graph.tensor_values.x.dtype'"},
    {"mistyped", [](json &m) { node0(m)["target"] = 3; },
     "expected a string, got number at 'graph_module.graph.nodes[0].target'"},
    {"not_a_list", [](json &m) { node0(m)["inputs"] = json::object(); },
     "expected a list, got object at 'graph_module.graph.nodes[0].inputs'"},
    {"missing_signature", [](json &m) { m["graph_module"].erase("signature"); },
     "missing field 'graph_module.signature'"},
    {"unknown_input_spec",
     [](json &m) {
       m["graph_module"]["signature"]["input_specs"][0] =
           json::object({{"lifted", json::object()}});
     },
     "unknown input spec kind 'lifted' at "
     "'graph_module.signature.input_specs[0].lifted'"},
    {"bad_module_stack",
     [](json &m) { node0(m)["metadata"]["nn_module_stack"] = "a,b"; },
     "expected nn_module_stack entries 'key,path,type', got 'a,b' at "
     "'graph_module.graph.nodes[0].metadata.nn_module_stack'"},
    {"dangling_output",
     [](json &m) { m["graph_module"]["graph"]["outputs"][0] = tensorArg("y"); },
     "graph_module.graph.outputs[0] is 'y' but "
     "graph_module.signature.output_specs[0] names 'mul'"},
};

TEST_F(ExportArchive, NamesTheFieldOfEachSchemaError) {
  for (const SchemaCase &c : kSchemaCases) {
    json model = modelJson();
    c.edit(model);
    std::string path = writeArchive(c.name, model);
    EXPECT_EQ(readError(path),
              "'" + path + "' has a malformed models/model.json: " + c.error)
        << c.name;
  }
}

TEST_F(ExportArchive, NamesTheFieldOfAPayloadConfigError) {
  json weights = weightsConfig();
  weights["config"]["w"].erase("is_param");
  std::string path = writeArchive("config", modelJson(), weights);
  EXPECT_EQ(readError(path),
            "'" + path +
                "' has a malformed data/weights/model_weights_config.json: "
                "missing field 'config.w.is_param'");
}

TEST_F(ExportArchive, SymbolNames) {
  auto symbolOf = [](const char *expr) {
    SymInt s;
    s.expr = expr;
    return s.getSymbolName();
  };
  EXPECT_EQ(symbolOf("Symbol('s0', positive=True, integer=True)"), "s0");
  EXPECT_EQ(symbolOf("Symbol('u1')"), "u1");
  EXPECT_EQ(symbolOf("Mul(Integer(2), Symbol('s0', positive=True))"),
            std::nullopt);
  EXPECT_EQ(symbolOf("Symbol('s0', positive=True) + 1"), std::nullopt);
}

} // namespace
