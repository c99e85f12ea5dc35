"""LinUCB bandit math and its store encoding (SPEC §6.6).

Context x = (the six delta features, each normalised to min(max(v, 0), cap) / cap with the
`[difficulty.<feature>]` caps, then a constant 1), so d = 7. Per arm (model): A (dxd, starts
as the identity) and b (d, starts at 0). Score = θᵀx + alpha·√(xᵀA⁻¹x) with θ = A⁻¹b; the pick
is the argmax. At commit: r = 1 - w · cost / dearest for a billed success without a
response-side strike, 0 otherwise; A += xxᵀ, b += r·x.

**Store encoding.** An arm is kept as one flat list of d·d + d floats: the row-major entries
of A - I, then b. Storing the offset from the initial state (not A itself) makes a missing
arm, a fresh hash of additive counters, and the all-zero list mean the same thing — the
initial state — so the store applies an update as `linucb_increments(x, r)` added
element-wise (HINCRBYFLOAT per field), with no read-modify-write. `decode_arm` adds I back.

Pure Python (Gauss-Jordan inverse with partial pivoting); no numpy, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from orca_cli.config.schema import DifficultyConfig, FeatureConfig

__all__ = [
    "FEATURE_ORDER",
    "D",
    "Matrix",
    "Vector",
    "apply_increments",
    "context_vector",
    "decode_arm",
    "dot",
    "encode_arm",
    "identity",
    "invert",
    "linucb_increments",
    "linucb_reward",
    "linucb_score",
    "linucb_update",
    "mat_vec",
]

D = 7
# The §4 features in table order; the delta vector is read in this order.
FEATURE_ORDER: tuple[str, ...] = (
    "log_prompt_tokens",
    "reasoning_cue_count",
    "system_prompt_log_len",
    "code_keyword_density",
    "has_tools",
    "math_marker_count",
)

Matrix = list[list[float]]
Vector = list[float]

_PIVOT_EPS = 1e-12


def identity(d: int = D) -> Matrix:
    return [[1.0 if i == j else 0.0 for j in range(d)] for i in range(d)]


def invert(m: Sequence[Sequence[float]]) -> Matrix:
    """The inverse of a square matrix by Gauss-Jordan elimination with partial pivoting.

    Raises ValueError on a (numerically) singular matrix. LinUCB's A is I + Σxxᵀ, symmetric
    positive definite, so it never is.
    """
    n = len(m)
    if any(len(row) != n for row in m):
        raise ValueError("matrix must be square")
    aug = [
        [float(v) for v in row] + [1.0 if i == j else 0.0 for j in range(n)]
        for i, row in enumerate(m)
    ]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(aug[r][col]))
        if abs(aug[pivot][col]) < _PIVOT_EPS:
            raise ValueError("matrix is singular")
        aug[col], aug[pivot] = aug[pivot], aug[col]
        p = aug[col][col]
        aug[col] = [v / p for v in aug[col]]
        for r in range(n):
            if r != col and aug[r][col] != 0.0:
                f = aug[r][col]
                aug[r] = [a - f * c for a, c in zip(aug[r], aug[col], strict=True)]
    return [row[n:] for row in aug]


def mat_vec(m: Sequence[Sequence[float]], v: Sequence[float]) -> Vector:
    return [dot(row, v) for row in m]


def dot(a: Sequence[float], b: Sequence[float]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


def context_vector(delta_features: Sequence[float], difficulty: DifficultyConfig) -> Vector:
    """x = (min(max(vᵢ, 0), capᵢ) / capᵢ for the six delta features, 1)."""
    if len(delta_features) != len(FEATURE_ORDER):
        raise ValueError(f"expected {len(FEATURE_ORDER)} delta features, got {len(delta_features)}")
    out: Vector = []
    for name, value in zip(FEATURE_ORDER, delta_features, strict=True):
        feat: FeatureConfig = getattr(difficulty, name)
        out.append(min(max(float(value), 0.0), feat.cap) / feat.cap if feat.cap > 0 else 0.0)
    out.append(1.0)
    return out


def encode_arm(a: Sequence[Sequence[float]], b: Sequence[float]) -> Vector:
    """Flat store form: row-major (A - I), then b; d·d + d floats."""
    d = len(b)
    flat = [float(a[i][j]) - (1.0 if i == j else 0.0) for i in range(d) for j in range(d)]
    return flat + [float(v) for v in b]


def decode_arm(flat: Sequence[float] | None, d: int = D) -> tuple[Matrix, Vector]:
    """(A, b) from the flat store form; None or empty means the initial (I, 0)."""
    if not flat:
        return identity(d), [0.0] * d
    if len(flat) != d * d + d:
        raise ValueError(f"a linucb arm has {d * d + d} values, got {len(flat)}")
    a = [[float(flat[i * d + j]) + (1.0 if i == j else 0.0) for j in range(d)] for i in range(d)]
    return a, [float(v) for v in flat[d * d :]]


def linucb_update(
    a: Sequence[Sequence[float]], b: Sequence[float], x: Sequence[float], reward: float
) -> tuple[Matrix, Vector]:
    """A + xxᵀ and b + r·x, as new lists."""
    new_a = [[a[i][j] + x[i] * x[j] for j in range(len(x))] for i in range(len(x))]
    new_b = [b[i] + reward * x[i] for i in range(len(x))]
    return new_a, new_b


def linucb_increments(x: Sequence[float], reward: float) -> Vector:
    """ΔA = xxᵀ (row-major) then Δb = r·x, to add element-wise to the stored flat list."""
    return [xi * xj for xi in x for xj in x] + [reward * xi for xi in x]


def apply_increments(flat: Sequence[float] | None, inc: Sequence[float]) -> Vector:
    """What the store does with additive counters: stored + increments (missing = zeros)."""
    base = list(flat) if flat else [0.0] * len(inc)
    if len(base) != len(inc):
        raise ValueError(f"increment length {len(inc)} does not match stored length {len(base)}")
    return [s + i for s, i in zip(base, inc, strict=True)]


def linucb_score(
    a: Sequence[Sequence[float]], b: Sequence[float], x: Sequence[float], alpha: float
) -> tuple[float, float, float]:
    """(θᵀx + alpha·√(xᵀA⁻¹x), θᵀx, √(xᵀA⁻¹x)) with θ = A⁻¹b."""
    a_inv = invert(a)
    theta = mat_vec(a_inv, b)
    mean = dot(theta, x)
    width = math.sqrt(max(dot(x, mat_vec(a_inv, x)), 0.0))
    return mean + alpha * width, mean, width


def linucb_reward(
    success: bool, strike: bool, cost: float, dearest_cost: float, cost_weight: float
) -> float:
    """r = 1 - w · cost / dearest for a billed success without a response-side strike, else 0.

    The cost ratio is clamped to [0, 1] (a request dearer than the dearest candidate's
    estimate costs as much as the dearest); a dearest cost of 0 makes the ratio 0.
    """
    if not success or strike:
        return 0.0
    ratio = min(max(cost / dearest_cost, 0.0), 1.0) if dearest_cost > 0 else 0.0
    return 1.0 - cost_weight * ratio
