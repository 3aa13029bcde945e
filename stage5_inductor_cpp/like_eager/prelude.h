#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <omp.h>

// glibc's vector math library (libmvec) has SIMD versions of these functions, but its
// headers announce them only under -ffast-math, which would break NaN and inf semantics.
// Announcing them ourselves lets `#pragma omp simd` loops call _ZGVdN8v_sinf & co.
#if defined(__x86_64__) && defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 35)
#define MINIDYNAMO_SIMD(name) \
    extern "C" float name##f(float) __attribute__((simd("notinbranch"))); \
    extern "C" double name(double) __attribute__((simd("notinbranch")));
MINIDYNAMO_SIMD(sin) MINIDYNAMO_SIMD(cos) MINIDYNAMO_SIMD(exp) MINIDYNAMO_SIMD(log)
MINIDYNAMO_SIMD(tanh) MINIDYNAMO_SIMD(erf) MINIDYNAMO_SIMD(tan) MINIDYNAMO_SIMD(atan)
MINIDYNAMO_SIMD(log1p) MINIDYNAMO_SIMD(expm1) MINIDYNAMO_SIMD(log2)
#endif

// torch.bfloat16: the upper half of a float32's bits. In memory a kernel keeps those bits
// (uint16_t); in registers, a float that holds a bfloat16's value: each value of that dtype
// is rounded on its way in (round_to_bfloat16), to nearest even as c10::BFloat16's
// round_to_nearest_even, NaN made 0x7FC0. Plain integers and floats, so that OpenMP's
// `simd` vectorises the loops (a struct with conversion operators kept them scalar).
inline float bfloat16_to_float(uint16_t bits) {
    return __builtin_bit_cast(float, static_cast<uint32_t>(bits) << 16);
}
inline uint16_t float_to_bfloat16(float value) {
    uint32_t u = __builtin_bit_cast(uint32_t, value);
    uint32_t rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16;
    return static_cast<uint16_t>(value != value ? 0x7FC0u : rounded);
}
inline float round_to_bfloat16(float value) { return bfloat16_to_float(float_to_bfloat16(value)); }

// torch.maximum/minimum propagate NaN; std::max does not.
template <typename T> inline T max_propagate_nan(T a, T b) {
    return a != a ? a : (b != b ? b : (a >= b ? a : b));  // equal: the first, as torch
}
template <typename T> inline T min_propagate_nan(T a, T b) {
    return a != a ? a : (b != b ? b : (a <= b ? a : b));
}
// torch.remainder: the result has the sign of the divisor (Python's %), unlike fmod.
template <typename T> inline T remainder_python(T a, T b) {
    T mod = std::fmod(a, b);
    return (mod != 0 && ((b < 0) != (mod < 0))) ? mod + b : mod;
}
