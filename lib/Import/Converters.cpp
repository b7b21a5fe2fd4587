//===- Converters.cpp - ATen/prim operator converters ---------------------===//
//
// One entry per TorchScript node kind. A converter reads its operands from
// the environment, computes the result shape, emits glimmer ops (or
// evaluates host values) and binds its outputs. Unsupported argument
// combinations fail with a message naming what is unsupported. Each op
// family registers its converters from its own file in Converters/.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

using namespace glimmer::detail;

void Importer::registerConverters() {
  registerHostValueConverters();
  registerArithmeticConverters();
  registerUnaryConverters();
  registerComparisonConverters();
  registerCastConverters();
  registerViewConverters();
  registerSlicingConverters();
  registerDataMovementConverters();
  registerCreationConverters();
  registerReductionConverters();
  registerModelOpConverters();
  registerIndexingConverters();
  registerAttentionConverters();
  registerConvolutionConverters();
  registerInterpolationConverters();
}
