//===- SpmdContext.cpp - Thread-local parallel layout ---------------------===//

#include "glimmer_contract/SpmdContext.h"

#include <cctype>
#include <limits>

using namespace glimmer;

static constexpr std::array<std::string_view, kNumMeshAxes> kAxisNames = {
    "dp_replicate", "dp_shard", "cp", "tp", "pp"};

std::string_view glimmer::meshAxisName(MeshAxis axis) {
  return kAxisNames[static_cast<unsigned>(axis)];
}

std::optional<MeshAxis> glimmer::meshAxisFromName(std::string_view name) {
  for (unsigned i = 0; i < kNumMeshAxes; ++i)
    if (kAxisNames[i] == name)
      return static_cast<MeshAxis>(i);
  return std::nullopt;
}

std::string_view glimmer::scheduleName(PipelineSchedule schedule) {
  switch (schedule) {
  case PipelineSchedule::GPipe:
    return "gpipe";
  case PipelineSchedule::Interleaved1F1B:
    return "interleaved_1f1b";
  case PipelineSchedule::OneFOneB:
    break;
  }
  return "1f1b";
}

std::string_view glimmer::balancerName(CpBalancer balancer) {
  return balancer == CpBalancer::Contiguous ? "contiguous" : "head_tail";
}

int64_t SpmdContext::worldSize() const {
  int64_t size = 1;
  for (int64_t d : degrees)
    size *= d;
  return size;
}

bool SpmdContext::operator==(const SpmdContext &other) const {
  return degrees == other.degrees && sp == other.sp &&
         microbatches == other.microbatches &&
         virtualStages == other.virtualStages && schedule == other.schedule &&
         balancer == other.balancer;
}

static std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

/// Parses a positive decimal integer without overflow.
static std::optional<int64_t> parsePositive(std::string_view s) {
  if (s.empty())
    return std::nullopt;
  int64_t value = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return std::nullopt;
    if (value > (std::numeric_limits<int64_t>::max() - (c - '0')) / 10)
      return std::nullopt;
    value = value * 10 + (c - '0');
  }
  if (value <= 0)
    return std::nullopt;
  return value;
}

static bool fail(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
  return false;
}

std::optional<SpmdContext> SpmdContext::parse(std::string_view text,
                                              std::string *error) {
  SpmdContext ctx;
  // Keys seen so far, for duplicate detection.
  std::string seen = ",";
  auto parseEntry = [&](std::string_view entry) -> bool {
    entry = trim(entry);
    if (entry.empty())
      return fail(error, "empty entry in SPMD layout '" + std::string(text) +
                             "' (stray ',')");
    size_t eq = entry.find('=');
    std::string key(trim(entry.substr(0, eq)));
    std::optional<std::string_view> value;
    if (eq != std::string_view::npos)
      value = trim(entry.substr(eq + 1));
    if (seen.find("," + key + ",") != std::string::npos)
      return fail(error, "duplicate key '" + key + "' in SPMD layout");
    seen += key + ",";

    auto needValue = [&](const char *what) {
      return fail(error, "key '" + key + "' needs a value (" + what + ")");
    };
    if (std::optional<MeshAxis> axis = meshAxisFromName(key)) {
      if (!value)
        return needValue("a positive integer degree");
      std::optional<int64_t> degree = parsePositive(*value);
      if (!degree)
        return fail(error, "degree of '" + key +
                               "' must be a positive integer, got '" +
                               std::string(*value) + "'");
      ctx.setDegree(*axis, *degree);
      return true;
    }
    if (key == "sp") {
      if (!value || *value == "true" || *value == "1") {
        ctx.sp = true;
        return true;
      }
      if (*value == "false" || *value == "0") {
        ctx.sp = false;
        return true;
      }
      return fail(error, "'sp' takes no value or one of true|false, got '" +
                             std::string(*value) + "'");
    }
    if (key == "microbatches") {
      if (!value)
        return needValue("a positive integer");
      std::optional<int64_t> n = parsePositive(*value);
      if (!n)
        return fail(error, "'microbatches' must be a positive integer, got '" +
                               std::string(*value) + "'");
      ctx.microbatches = *n;
      return true;
    }
    if (key == "virtual_stages") {
      if (!value)
        return needValue("a positive integer");
      std::optional<int64_t> n = parsePositive(*value);
      if (!n)
        return fail(error,
                    "'virtual_stages' must be a positive integer, got '" +
                        std::string(*value) + "'");
      ctx.virtualStages = *n;
      return true;
    }
    if (key == "schedule") {
      if (!value)
        return needValue("1f1b, gpipe or interleaved_1f1b");
      if (*value == "1f1b")
        ctx.schedule = PipelineSchedule::OneFOneB;
      else if (*value == "gpipe")
        ctx.schedule = PipelineSchedule::GPipe;
      else if (*value == "interleaved_1f1b")
        ctx.schedule = PipelineSchedule::Interleaved1F1B;
      else
        return fail(error, "unknown pipeline schedule '" + std::string(*value) +
                               "' (expected 1f1b, gpipe or interleaved_1f1b)");
      return true;
    }
    if (key == "balancer") {
      if (!value)
        return needValue("head_tail or contiguous");
      if (*value == "head_tail")
        ctx.balancer = CpBalancer::HeadTail;
      else if (*value == "contiguous")
        ctx.balancer = CpBalancer::Contiguous;
      else
        return fail(error, "unknown CP load balancer '" + std::string(*value) +
                               "' (expected head_tail or contiguous)");
      return true;
    }
    return fail(error, "unknown key '" + key +
                           "' in SPMD layout (expected one of dp_replicate, "
                           "dp_shard, cp, tp, pp, sp, microbatches, "
                           "virtual_stages, schedule, balancer)");
  };

  std::string_view rest = trim(text);
  if (!rest.empty()) {
    while (true) {
      size_t comma = rest.find(',');
      if (!parseEntry(rest.substr(0, comma)))
        return std::nullopt;
      if (comma == std::string_view::npos)
        break;
      rest = rest.substr(comma + 1);
    }
  }
  std::string problem = ctx.validate();
  if (!problem.empty()) {
    fail(error, problem);
    return std::nullopt;
  }
  return ctx;
}

std::string SpmdContext::validate() const {
  for (unsigned i = 0; i < kNumMeshAxes; ++i)
    if (degrees[i] < 1)
      return "degree of '" + std::string(kAxisNames[i]) +
             "' must be a positive integer, got " + std::to_string(degrees[i]);
  if (microbatches < 1)
    return "'microbatches' must be a positive integer, got " +
           std::to_string(microbatches);
  // Every consumer multiplies the degrees (worldSize, rank bookkeeping);
  // a product past int64 would be undefined behaviour there.
  int64_t size = 1;
  for (int64_t d : degrees)
    if (__builtin_mul_overflow(size, d, &size))
      return "the layout's world size (the product of the mesh degrees) "
             "does not fit in a 64-bit integer";
  if (virtualStages < 1)
    return "'virtual_stages' must be a positive integer, got " +
           std::to_string(virtualStages);
  bool interleaved = schedule == PipelineSchedule::Interleaved1F1B;
  if (interleaved != (virtualStages > 1))
    return "the interleaved_1f1b schedule runs several stages per pp rank: "
           "it needs virtual_stages > 1, and virtual_stages > 1 needs it";
  if (interleaved && microbatches % pp() != 0)
    return "interleaved 1F1B needs the micro-batches (" +
           std::to_string(microbatches) + ") to be a multiple of pp (" +
           std::to_string(pp()) + ")";
  if (sp && tp() == 1)
    return "'sp' (sequence parallelism) shards activations over the tp axis "
           "and needs tp > 1";
  return "";
}

std::string SpmdContext::print() const {
  std::string out;
  auto add = [&](std::string entry) {
    if (!out.empty())
      out += ',';
    out += entry;
  };
  for (unsigned i = 0; i < kNumMeshAxes; ++i)
    if (degrees[i] != 1)
      add(std::string(kAxisNames[i]) + "=" + std::to_string(degrees[i]));
  if (sp)
    add("sp");
  if (microbatches != 1)
    add("microbatches=" + std::to_string(microbatches));
  if (virtualStages != 1)
    add("virtual_stages=" + std::to_string(virtualStages));
  if (schedule != PipelineSchedule::OneFOneB)
    add("schedule=" + std::string(scheduleName(schedule)));
  if (balancer != CpBalancer::HeadTail)
    add("balancer=" + std::string(balancerName(balancer)));
  return out;
}

template <>
const SpmdContext *&ThreadCurrent<SpmdContext>::slot() {
  thread_local const SpmdContext *current = nullptr;
  return current;
}

const SpmdContext &SpmdContext::current() {
  static const SpmdContext kDefault{};
  return ThreadCurrent<SpmdContext>::get(kDefault);
}
