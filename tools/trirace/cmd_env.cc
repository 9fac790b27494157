// trirace env: the parameter table as this process sees it.
#include <algorithm>
#include <cstdio>
#include <string>

#include "commands.h"
#include "common/params.h"

namespace trirace::tools {
namespace {

int ListParams() {
  const Params& params = Params::Get();
  size_t name_w = 4, value_w = 5, default_w = 7;
  for (const ParamSpec& spec : Params::Specs()) {
    name_w = std::max(name_w, spec.name.size());
    value_w = std::max(value_w, params.Value(spec.id).text.size());
    default_w = std::max(default_w, spec.default_text.size());
  }
  value_w = std::min<size_t>(value_w, 40);
  auto quoted = [](absl::string_view s) { return s.empty() ? std::string("\"\"") : std::string(s); };
  std::printf("%-*s  %-*s  %-11s  %-*s  %s\n", static_cast<int>(name_w), "NAME", static_cast<int>(value_w),
              "VALUE", "SOURCE", static_cast<int>(default_w), "DEFAULT", "DESCRIPTION");
  for (const ParamSpec& spec : Params::Specs()) {
    const ParamValue& v = params.Value(spec.id);
    std::printf("%-*s  %-*s  %-11s  %-*s  %s [%s; %s]\n", static_cast<int>(name_w),
                std::string(spec.name).c_str(), static_cast<int>(value_w), quoted(v.text).c_str(),
                std::string(ParamSourceName(v.source)).c_str(), static_cast<int>(default_w),
                quoted(spec.default_text).c_str(), std::string(spec.description).c_str(),
                std::string(ParamTypeName(spec.type)).c_str(), spec.Accepted().c_str());
  }
  return 0;
}

}  // namespace

Command AddEnvCommand(CLI::App& trirace) {
  CLI::App* cmd =
      trirace.add_subcommand("env", "list every TRIRACE_* parameter: value, source, default, description");
  cmd->footer(
      "Lists every TRIRACE_* parameter with the value this environment gives it, where the\n"
      "value came from (default or environment), the default, and what it does. A bad value\n"
      "is reported on stderr and shown as the default that replaces it.");
  return {cmd, ListParams};
}

}  // namespace trirace::tools
