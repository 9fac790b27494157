// Symbol visibility. Everything is hidden by default (-fvisibility=hidden);
// a function that is part of a shared library's ABI is marked TRIRACE_EXPORT
// and also listed in that library's version script.
#ifndef TRIRACE_COMMON_EXPORT_H_
#define TRIRACE_COMMON_EXPORT_H_

#define TRIRACE_EXPORT __attribute__((visibility("default")))

#endif  // TRIRACE_COMMON_EXPORT_H_
