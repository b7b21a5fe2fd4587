module {
  func.func @f(%a: tensor<2x