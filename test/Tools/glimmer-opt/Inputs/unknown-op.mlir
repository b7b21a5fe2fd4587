func.func @f() {
  glimmer.frobnicate
  return
}
