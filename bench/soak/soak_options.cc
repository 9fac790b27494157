#include "soak_options.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>
#include <type_traits>

namespace trirace::soak {
namespace {

bool ToInt(const std::string& text, int64_t lo, int64_t hi, int64_t* out) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool ToDouble(const std::string& text, double lo, double hi, double* out) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v >= lo && v <= hi)) return false;
  *out = v;
  return true;
}

// "a=1 b=2 ..." after the line's first word; `tail_key` takes the rest of the line.
std::map<std::string, std::string> Fields(const std::string& line, const char* tail_key) {
  std::map<std::string, std::string> f;
  std::istringstream in(line.substr(line.find(' ') + 1));
  for (std::string word; in >> word;) {
    const size_t eq = word.find('=');
    if (eq == std::string::npos) continue;
    std::string key = word.substr(0, eq), value = word.substr(eq + 1);
    if (key == tail_key) {
      std::string rest;
      std::getline(in, rest);
      value += rest;
    }
    f[key] = value;
  }
  return f;
}

}  // namespace

const char* Usage() {
  return "usage: soak_ranks --shim LIBTRIRACE --nccl LIBNCCL [--nranks 2] [--ops 1000000] [--comms 1000]\n"
         "                  [--alive 3] [--samples 20] [--seed 1] [--trace-buffer-mb 1] [--warmup 0.1]\n"
         "                  [--rss-limit-mib 8] [--fd-limit 0] [--thread-limit 0] [--shm-limit 0]\n"
         "                  [--dir DIR] [--keep] [--stall-s 120] [--timeout-s 0] [--quiet] [--help]\n"
         "  ops must be a multiple of comms, and comms of samples (each wave has whole comms)\n";
}

bool ParseOptions(int argc, char** argv, Options* o, std::string* error) {
  auto int_opt = [](auto* field, int64_t lo, int64_t hi) {
    return [field, lo, hi](const std::string& v) {
      int64_t x = 0;
      if (!ToInt(v, lo, hi, &x)) return false;
      *field = static_cast<std::remove_pointer_t<decltype(field)>>(x);
      return true;
    };
  };
  auto double_opt = [](double* field, double lo, double hi) {
    return [field, lo, hi](const std::string& v) { return ToDouble(v, lo, hi, field); };
  };
  auto string_opt = [](std::string* field) {
    return [field](const std::string& v) {
      *field = v;
      return true;
    };
  };
  const std::map<std::string, std::function<bool(const std::string&)>> with_value = {
      {"--shim", string_opt(&o->shim)},
      {"--nccl", string_opt(&o->nccl)},
      {"--nranks", int_opt(&o->nranks, 2, 64)},
      {"--ops", int_opt(&o->ops, 1, int64_t{1} << 40)},
      {"--comms", int_opt(&o->comms, 1, 1 << 24)},
      {"--alive", int_opt(&o->alive, 1, 64)},
      {"--samples", int_opt(&o->samples, 2, 10000)},
      {"--seed", int_opt(&o->seed, 0, INT64_MAX)},
      {"--trace-buffer-mb", int_opt(&o->trace_buffer_mb, 1, 65536)},
      {"--warmup", double_opt(&o->warmup, 0, 0.9)},
      {"--rss-limit-mib", double_opt(&o->rss_limit_mib, 0, 1e6)},
      {"--fd-limit", int_opt(&o->fd_limit, 0, 1 << 20)},
      {"--thread-limit", int_opt(&o->thread_limit, 0, 1 << 20)},
      {"--shm-limit", int_opt(&o->shm_limit, 0, 1 << 20)},
      {"--dir", string_opt(&o->dir)},
      {"--stall-s", int_opt(&o->stall_s, 1, 86400)},
      {"--timeout-s", int_opt(&o->timeout_s, 0, 864000)},
      {"--rank", int_opt(&o->rank, 0, 63)},
      {"--log", string_opt(&o->log)},
      {"--job", string_opt(&o->job)},
      {"--uid-fds",
       [o](const std::string& v) {
         std::istringstream in(v);
         for (std::string part; std::getline(in, part, ',');) {
           int64_t fd = 0;
           if (!ToInt(part, 0, 1 << 20, &fd)) return false;
           o->uid_fds.push_back(static_cast<int>(fd));
         }
         return !o->uid_fds.empty();
       }},
  };
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--keep") {
      o->keep = true;
      continue;
    }
    if (k == "--quiet") {
      o->quiet = true;
      continue;
    }
    auto it = with_value.find(k);
    if (it == with_value.end()) {
      *error = "unknown argument " + k;
      return false;
    }
    if (i + 1 >= argc || !it->second(argv[i + 1])) {
      *error = k + " needs a valid value" + (i + 1 < argc ? std::string(", not ") + argv[i + 1] : "");
      return false;
    }
    ++i;
  }
  if (o->shim.empty() || o->nccl.empty()) {
    *error = "--shim and --nccl are required";
    return false;
  }
  if (o->ops % o->comms != 0 || o->comms % o->samples != 0) {
    *error = "ops must be a multiple of comms, and comms a multiple of samples";
    return false;
  }
  if (o->rank >= o->nranks) {
    *error = "--rank must be below --nranks";
    return false;
  }
  return true;
}

std::string FormatSample(const Sample& s) {
  char line[512];
  std::snprintf(line, sizeof(line),
                "sample rank=%d ops=%" PRId64 " created=%" PRId64 " alive=%" PRId64 " rss_kb=%" PRId64
                " fds=%" PRId64 " threads=%" PRId64 " shm_objects=%" PRId64 " shm_maps=%" PRId64
                " trace_records=%" PRId64 " trace_dropped=%" PRId64 " trace_waiting=%" PRId64 " trace_high=%" PRId64
                " trace_capacity=%" PRId64 " seconds=%.3f",
                s.rank, s.ops, s.comms_created, s.comms_alive, s.rss_kb, s.fds, s.threads, s.shm_objects,
                s.shm_maps, s.trace_records, s.trace_dropped, s.trace_waiting, s.trace_high, s.trace_capacity,
                s.seconds);
  return line;
}

bool ParseSample(const std::string& line, Sample* s) {
  if (line.rfind("sample ", 0) != 0) return false;
  const auto f = Fields(line, "");
  const char* keys[] = {"rank", "ops", "created", "alive", "rss_kb", "fds", "threads", "shm_objects", "shm_maps",
                        "trace_records", "trace_dropped", "trace_waiting", "trace_high", "trace_capacity",
                        "seconds"};
  for (const char* k : keys) {
    if (f.count(k) == 0) return false;
  }
  auto i64 = [&](const char* k) { return std::strtoll(f.at(k).c_str(), nullptr, 10); };
  s->rank = static_cast<int>(i64("rank"));
  s->ops = i64("ops");
  s->comms_created = i64("created");
  s->comms_alive = i64("alive");
  s->rss_kb = i64("rss_kb");
  s->fds = i64("fds");
  s->threads = i64("threads");
  s->shm_objects = i64("shm_objects");
  s->shm_maps = i64("shm_maps");
  s->trace_records = i64("trace_records");
  s->trace_dropped = i64("trace_dropped");
  s->trace_waiting = i64("trace_waiting");
  s->trace_high = i64("trace_high");
  s->trace_capacity = i64("trace_capacity");
  s->seconds = std::strtod(f.at("seconds").c_str(), nullptr);
  return true;
}

std::string FormatResult(const Result& r) {
  char line[256];
  std::snprintf(line, sizeof(line),
                "result rank=%d ops=%" PRId64 " checked=%" PRId64 " wrong=%" PRId64 " failed_calls=%" PRId64
                " annotation_errors=%" PRId64 " trace_caused=%" PRId64,
                r.rank, r.ops, r.values_checked, r.wrong_values, r.failed_calls, r.annotation_errors, r.trace_caused);
  std::string out = line;
  if (!r.first_problem.empty()) out += " problem=" + r.first_problem;
  return out;
}

bool ParseResult(const std::string& line, Result* r) {
  if (line.rfind("result ", 0) != 0) return false;
  const auto f = Fields(line, "problem");
  for (const char* k : {"rank", "ops", "checked", "wrong", "failed_calls", "annotation_errors", "trace_caused"}) {
    if (f.count(k) == 0) return false;
  }
  auto i64 = [&](const char* k) { return std::strtoll(f.at(k).c_str(), nullptr, 10); };
  r->rank = static_cast<int>(i64("rank"));
  r->ops = i64("ops");
  r->values_checked = i64("checked");
  r->wrong_values = i64("wrong");
  r->failed_calls = i64("failed_calls");
  r->annotation_errors = i64("annotation_errors");
  r->trace_caused = i64("trace_caused");
  r->first_problem = f.count("problem") != 0 ? f.at("problem") : "";
  return true;
}

}  // namespace trirace::soak
