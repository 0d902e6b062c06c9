// File: analysis/changepoint/vec_math.h
// Four-lane log and exp for the BOCD inner loops (normal_gamma.cc, bocd.cc), written with GCC
// vector extensions so one source compiles to AVX2 (one ymm register) or to SSE2 (two xmm
// registers) — the callers are `target_clones("avx2", "default")`, so the binary runs on any
// x86-64. Only IEEE add, sub, mul, div and integer bit operations are used and no FMA (the clones
// do not enable it), so every lane gives the same bits on either path: detections cannot depend
// on the machine.
//
// Accuracy (vec_math_test.cc, against glibc): Log4 within 1 ulp for positive normal numbers,
// Exp4 within 1 ulp for y <= 0. Not for general use: no NaN, infinity, zero, negative or
// subnormal inputs for Log4, and Exp4 clamps y to [-1400, 0] (exact 0 below about -745, as
// glibc). Coefficients: scripts/gen_vec_math_coefficients.py (interpolation at Chebyshev nodes).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

// The helpers below are always inlined, so the ABI of 32-byte vector arguments and returns never
// applies; GCC warns about it in the includers' default (SSE2) clones all the same. Left ignored
// for the includers (only the BOCD kernels and the test).
#pragma GCC diagnostic ignored "-Wpsabi"

namespace prism::analysis::vec {

using V4d = double __attribute__((vector_size(32)));
using V4u = uint64_t __attribute__((vector_size(32)));

#define PRISM_VEC_INLINE [[gnu::always_inline]] inline

PRISM_VEC_INLINE V4d Splat(double v) { return V4d{v, v, v, v}; }
PRISM_VEC_INLINE V4d Load(const double* p) {
  V4d v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
PRISM_VEC_INLINE V4u LoadU(const uint64_t* p) {
  V4u v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
PRISM_VEC_INLINE void Store(double* p, V4d v) { std::memcpy(p, &v, sizeof(v)); }
PRISM_VEC_INLINE void StoreU(uint64_t* p, V4u v) { std::memcpy(p, &v, sizeof(v)); }
PRISM_VEC_INLINE V4d Max(V4d a, V4d b) { return a > b ? a : b; }
PRISM_VEC_INLINE V4d AsDouble(V4u v) { return std::bit_cast<V4d>(v); }
PRISM_VEC_INLINE V4u AsBits(V4d v) { return std::bit_cast<V4u>(v); }

// Integers below 2^52 to double, exactly (AVX2 has no 64-bit integer conversion).
PRISM_VEC_INLINE V4d U52ToDouble(V4u v) {
  constexpr uint64_t kTwo52Bits = 0x4330000000000000;  // 2^52
  return AsDouble(v | kTwo52Bits) - Splat(4503599627370496.0);
}

// Natural log of positive normal numbers. x = 2^k m with m in [sqrt(1/2), sqrt(2)), f = m - 1,
// s = f / (2 + f): log(m) = 2 atanh(s) = f - s (f - R(s^2)), R(z) = z Q(z), |s| <= 0.1716.
PRISM_VEC_INLINE V4d Log4(V4d x) {
  constexpr uint64_t kSqrtHalfBits = 0x3FE6A09E667F3BCD;  // sqrt(1/2)
  constexpr uint64_t kOneBits = 0x3FF0000000000000;
  constexpr uint64_t kMantissa = 0x000FFFFFFFFFFFFF;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;  // ln 2, upper 32 bits: k ln2hi exact
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  // u >> 52 = k + 1023; the low 52 bits plus sqrt(1/2) are m (the carry lands in the exponent).
  const V4u u = AsBits(x) - (kSqrtHalfBits - kOneBits);
  const V4d k = U52ToDouble(u >> 52) - Splat(1023.0);
  const V4d m = AsDouble((u & kMantissa) + kSqrtHalfBits);
  const V4d f = m - 1.0;
  const V4d s = f / (f + 2.0);
  const V4d z = s * s;
  // Q(z) by Estrin's scheme: a short dependency chain, since the loops are latency-bound.
  const V4d z2 = z * z;
  const V4d z4 = z2 * z2;
  const V4d q01 = 0.666666666666667 + 0.3999999999989889 * z;
  const V4d q23 = 0.28571428626253836 + 0.22222211089379496 * z;
  const V4d q45 = 0.1818289243253687 + 0.15331611722055008 * z;
  const V4d q = (q01 + q23 * z2) + (q45 + 0.14617807153417325 * z2) * z4;
  const V4d r = z * q;
  return k * kLn2Hi + ((f - s * (f - r)) + k * kLn2Lo);
}

// e^y for y <= 0 (larger y are clamped to 0, smaller than -1400 to -1400). y = n ln2 + r with
// |r| <= ln2 / 2, e^r = 1 + r P(r); 2^n is applied as two normal factors so that results down to
// the subnormal range come out right, and e^0 is exactly 1.
PRISM_VEC_INLINE V4d Exp4(V4d y) {
  constexpr double kLog2e = 1.4426950408889634;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  constexpr double kRound = 6755399441055744.0;  // 1.5 * 2^52: adding it rounds to an integer
  y = y < -1400.0 ? Splat(-1400.0) : y;
  y = y > 0.0 ? Splat(0.0) : y;
  const V4d t = y * kLog2e + kRound;
  const V4d n = t - kRound;                                 // round(y / ln 2), -2020 <= n <= 0
  const V4u ni = AsBits(t) - AsBits(Splat(kRound));         // the same n as a two's complement
  const V4d r = (y - n * kLn2Hi) - n * kLn2Lo;
  // P(r) by Estrin's scheme.
  const V4d r2 = r * r;
  const V4d r4 = r2 * r2;
  const V4d r8 = r4 * r4;
  const V4d p01 = 1.0 + 0.5000000000000006 * r;
  const V4d p23 = 0.1666666666666667 + 0.04166666666657239 * r;
  const V4d p45 = 0.008333333333326084 + 0.0013888888932751 * r;
  const V4d p67 = 0.0001984126987500228 + 2.4801504014426906e-05 * r;
  const V4d p89 = 2.755725517000089e-06 + 2.7626495546432196e-07 * r;
  const V4d p = ((p01 + p23 * r2) + (p45 + p67 * r2) * r4) +
                (p89 + 2.5105312729622103e-08 * r2) * r8;
  const V4d er = r * p + 1.0;
  // n = n1 + n2 with n1 = a - 1024, a = (n + 2048) / 2: both exponents in [-1010, 0].
  const V4u a = (ni + 2048) >> 1;
  const V4d s1 = AsDouble((a - 1) << 52);
  const V4d s2 = AsDouble((ni - a + 2047) << 52);
  return (er * s1) * s2;
}

#undef PRISM_VEC_INLINE

}  // namespace prism::analysis::vec
