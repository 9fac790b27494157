// trirace: the TriRace command line. CLI11 parses it: one subcommand per
// command (commands.h), each with its flags.
#include <cstdio>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "commands.h"

namespace trirace::tools {
namespace {

// The help's look: lower-case headings, "commands" for the subcommands.
void StyleHelp(CLI::App& app) {
  auto format = std::make_shared<CLI::Formatter>();
  format->label("Usage", "usage");
  format->label("OPTIONS", "options");
  format->label("SUBCOMMAND", "command");
  format->label("Positionals", "arguments");
  format->column_width(26);
  app.formatter(format);
  // Every flag (and each subcommand's --help) in the group "options";
  // several values of one flag: the last one counts.
  app.option_defaults()->group("options")->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.set_help_flag("-h,--help", "print this help and exit");
}

// What CLI11 rejected, in the words of the command's earlier parser:
// unknown options and arguments by name, a flag without its value.
std::string Explain(const CLI::App& where, const CLI::ParseError& e) {
  const std::string what = e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr && where.remaining_size() > 0) {
    const std::string arg = where.remaining().front();
    return (arg[0] == '-' ? "unknown option \"" : "unexpected argument \"") + arg + "\"";
  }
  // "--mode: 1 required M missing"
  const size_t colon = what.find(": ");
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr && colon != std::string::npos &&
      what.find(" required ", colon) != std::string::npos) {
    return what.substr(0, colon) + " needs a value";
  }
  return what;
}

}  // namespace

int Main(int argc, char** argv) {
  CLI::App app("The TriRace command line: run programs with TriRace, inspect its settings and the "
               "network it sees, show its speed-up.",
               "trirace");
  StyleHelp(app);
  std::vector<Command> commands = {AddVersionCommand(app), AddEnvCommand(app), AddRunCommand(app),
                                   AddNetTopCommand(app), AddDemoCommand(app),
                                   AddTopoCommand(app)};
#ifdef TRIRACE_WITH_SIM
  commands.push_back(AddSimCommand(app));
  commands.push_back(AddAdviseCommand(app));
#endif
#ifdef TRIRACE_WITH_DOCTOR
  commands.push_back(AddDoctorCommand(app));
#endif
  for (const Command& c : commands) {
    c.app->group("commands");
    c.app->set_help_flag("-h,--help", "print this help and exit");  // in the group "options"
  }
  CLI::App* help = app.add_subcommand("help", "")->group("");  // `trirace help`: not listed
  // The flag most tools answer; the same text as `trirace version`.
  app.set_version_flag("--version", VersionText, "print the version, as `trirace version` does, and exit");
  app.require_subcommand(0, 1);
  app.footer("`trirace <command> --help` describes one command.");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", app.help().c_str());  // the command's, when one was named
    return 0;
  } catch (const CLI::CallForVersion& e) {  // a ParseError too: caught before them
    std::printf("%s", e.what());
    return 0;
  } catch (const CLI::ParseError& e) {
    const std::vector<CLI::App*> named = app.get_subcommands();
    if (named.empty()) {
      if (app.remaining_size() > 0 && app.remaining().front()[0] != '-') {
        std::fprintf(stderr, "trirace: unknown command \"%s\"\n\n%s", app.remaining().front().c_str(),
                     app.help().c_str());
      } else {
        std::fprintf(stderr, "trirace: %s (see trirace --help)\n", Explain(app, e).c_str());
      }
      return kExitUsage;
    }
    const std::string who = "trirace " + named.front()->get_name();
    std::fprintf(stderr, "%s: %s (see %s --help)\n", who.c_str(), Explain(*named.front(), e).c_str(),
                 who.c_str());
    return kExitUsage;
  }
  if (help->parsed()) {  // the top-level help, not the help subcommand's
    std::printf("%s", app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal).c_str());
    return 0;
  }
  for (const Command& c : commands) {
    if (c.app->parsed()) return c.run();
  }
  std::fprintf(stderr, "%s", app.help().c_str());
  return kExitUsage;
}

}  // namespace trirace::tools

int main(int argc, char** argv) { return trirace::tools::Main(argc, argv); }
