//===- Attributes.cpp - Names the compiler and the runtime share ----------===//

#include "glimmer_contract/Attributes.h"

using namespace glimmer;

static constexpr std::string_view kDialectPrefix = "glimmer.";

const RoleAttr *glimmer::roleAttrNamed(std::string_view attr) {
  for (const RoleAttr &r : kRoleAttrs)
    if (attr == r.attr)
      return &r;
  return nullptr;
}

std::string_view glimmer::roleName(Role role) {
  for (const RoleAttr &r : kRoleAttrs)
    if (r.role == role)
      return std::string_view(r.attr).substr(kDialectPrefix.size());
  return "other";
}

std::optional<Role> glimmer::roleFromName(std::string_view name) {
  for (const RoleAttr &r : kRoleAttrs)
    if (std::string_view(r.attr).substr(kDialectPrefix.size()) == name)
      return r.role;
  if (name == roleName(Role::Other))
    return Role::Other;
  return std::nullopt;
}
