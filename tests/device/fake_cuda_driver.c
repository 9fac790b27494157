/* A stand-in for libcuda.so.1 that exports only cuInit and the error-string
 * calls, to test how the CUDA backend reports a driver that fails to
 * initialise (FAKE_CUINIT_RESULT, default 100 = CUDA_ERROR_NO_DEVICE) or
 * lacks entry points (FAKE_CUINIT_RESULT=0). */
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT int cuInit(unsigned flags) {
  (void)flags;
  const char* v = getenv("FAKE_CUINIT_RESULT");
  return v != NULL ? atoi(v) : 100;
}

EXPORT int cuGetErrorName(int error, const char** text) {
  if (error != 100) return 1;
  *text = "CUDA_ERROR_NO_DEVICE";
  return 0;
}

EXPORT int cuGetErrorString(int error, const char** text) {
  if (error != 100) return 1;
  *text = "no CUDA-capable device is detected";
  return 0;
}
