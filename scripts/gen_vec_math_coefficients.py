#!/usr/bin/env python3
"""Polynomial coefficients of src/analysis/changepoint/vec_math.h (standard library only).

Each polynomial interpolates its function at Chebyshev nodes of the reduced range, computed with
50-digit decimals; interpolation at Chebyshev nodes is within a small factor of the minimax
polynomial. Prints the coefficients (lowest degree first) rounded to double, and the largest
relative error of the polynomial with those doubles on a dense grid (still in decimal arithmetic).

  log: x = 2^k m, m in [sqrt(1/2), sqrt(2)), f = m - 1, s = f / (2 + f), z = s^2 <= (3 - 2 sqrt 2)^2.
       log(1 + f) = 2 atanh(s) = 2 s + s R(z) with R(z) = z Q(z), Q(z) = sum_j>=1 2 z^(j-1) / (2j+1).
  exp: y = n ln2 + r, |r| <= ln2 / 2;  e^r = 1 + r P(r), P(r) = (e^r - 1) / r.
"""
from decimal import Decimal, getcontext

getcontext().prec = 50
D = Decimal


def cos_d(x):
    # Taylor series, fine for |x| <= pi.
    term, total, k = D(1), D(1), 0
    while True:
        k += 2
        term = -term * x * x / (k * (k - 1))
        if abs(term) < D(10) ** -45:
            return total
        total += term


PI = D("3.14159265358979323846264338327950288419716939937510")


def q_log(z):  # sum_{j>=1} 2 z^(j-1) / (2j+1)
    total, zj, j = D(0), D(1), 1
    while True:
        t = 2 * zj / (2 * j + 1)
        if t < D(10) ** -45:
            return total
        total += t
        zj *= z
        j += 1


def p_exp(r):  # (e^r - 1) / r = sum_{k>=0} r^k / (k+1)!
    total, term, k = D(0), D(1), 0
    while True:
        if abs(term) < D(10) ** -45:
            return total
        total += term
        k += 1
        term = term * r / (k + 1)


def solve(a, b):
    n = len(b)
    m = [row[:] + [bb] for row, bb in zip(a, b)]
    for c in range(n):
        p = max(range(c, n), key=lambda i: abs(m[i][c]))
        m[c], m[p] = m[p], m[c]
        for i in range(n):
            if i != c:
                f = m[i][c] / m[c][c]
                m[i] = [x - f * y for x, y in zip(m[i], m[c])]
    return [m[i][n] / m[i][i] for i in range(n)]


def fit(fn, lo, hi, degree):
    nodes = [(lo + hi) / 2 + (hi - lo) / 2 * cos_d(PI * (2 * i + 1) / (2 * (degree + 1)))
             for i in range(degree + 1)]
    rows = [[D(1)] + [x ** j for j in range(1, degree + 1)] for x in nodes]
    coeffs = solve(rows, [fn(x) for x in nodes])
    as_double = [float(c) for c in coeffs]
    worst = D(0)
    for i in range(2001):
        x = lo + (hi - lo) * i / 2000
        approx = D(0)
        for c in reversed(as_double):
            approx = approx * x + D(c)
        exact = fn(x)
        worst = max(worst, abs(approx - exact) / abs(exact))
    return as_double, worst


def main():
    s_max = 3 - 2 * D(2).sqrt()
    coeffs, err = fit(q_log, D(0), s_max * s_max * D("1.001"), 6)
    print(f"log Q(z), degree 6, max rel error {float(err):.3g}")
    for c in coeffs:
        print(f"  {c!r},")
    half_ln2 = D(2).ln() / 2 * D("1.001")
    coeffs, err = fit(p_exp, -half_ln2, half_ln2, 10)
    print(f"exp P(r), degree 10, max rel error {float(err):.3g}")
    for c in coeffs:
        print(f"  {c!r},")


if __name__ == "__main__":
    main()
