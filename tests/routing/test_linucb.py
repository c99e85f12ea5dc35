"""SPEC §6.6: LinUCB math — inverse, context, reward, learning, and the store encoding."""

from __future__ import annotations

import math
import random

import pytest

from orca_cli.config.schema import DifficultyConfig
from orca_cli.routing.linucb import (
    D,
    apply_increments,
    context_vector,
    decode_arm,
    dot,
    encode_arm,
    identity,
    invert,
    linucb_increments,
    linucb_reward,
    linucb_score,
    linucb_update,
)


def _matmul(a: list[list[float]], b: list[list[float]]) -> list[list[float]]:
    return [
        [sum(a[i][k] * b[k][j] for k in range(len(b))) for j in range(len(b[0]))]
        for i in range(len(a))
    ]


def _close(a: list[list[float]], b: list[list[float]], tol: float = 1e-9) -> bool:
    return all(
        abs(x - y) <= tol for ra, rb in zip(a, b, strict=True) for x, y in zip(ra, rb, strict=True)
    )


def _spd(rng: random.Random, n: int = D, updates: int = 25) -> list[list[float]]:
    a = identity(n)
    for _ in range(updates):
        x = [rng.uniform(-1, 1) for _ in range(n)]
        a, _ = linucb_update(a, [0.0] * n, x, 0.0)
    return a


def test_inverse_of_identity_is_identity() -> None:
    assert invert(identity()) == identity()


def test_inverse_times_matrix_is_identity_for_linucb_matrices() -> None:
    rng = random.Random(11)
    for _ in range(20):
        a = _spd(rng)
        inv = invert(a)
        assert _close(_matmul(a, inv), identity(), 1e-8)
        assert _close(_matmul(inv, a), identity(), 1e-8)


def test_inverse_needs_pivoting() -> None:
    m = [[0.0, 1.0], [1.0, 0.0]]
    assert invert(m) == [[0.0, 1.0], [1.0, 0.0]]
    assert _close(invert([[2.0, 1.0], [1.0, 3.0]]), [[0.6, -0.2], [-0.2, 0.4]])


def test_singular_matrix_raises() -> None:
    with pytest.raises(ValueError, match="singular"):
        invert([[1.0, 2.0], [2.0, 4.0]])


def test_context_vector_normalises_with_caps_and_appends_bias() -> None:
    diff = DifficultyConfig()
    x = context_vector([math.log(8001) / 2, 10, 0, 2.5, 1, -3], diff)
    assert len(x) == D
    assert x == pytest.approx([0.5, 1.0, 0.0, 0.5, 1.0, 0.0, 1.0])


def test_context_vector_wrong_length_raises() -> None:
    with pytest.raises(ValueError):
        context_vector([0.0] * 5, DifficultyConfig())


def test_reward_formula() -> None:
    assert linucb_reward(True, False, 1.0, 4.0, 0.5) == pytest.approx(1 - 0.5 * 0.25)
    assert linucb_reward(True, False, 4.0, 4.0, 0.5) == pytest.approx(0.5)
    assert linucb_reward(True, False, 0.0, 4.0, 0.5) == 1.0
    assert linucb_reward(True, True, 1.0, 4.0, 0.5) == 0.0  # response-side strike
    assert linucb_reward(False, False, 1.0, 4.0, 0.5) == 0.0  # not a billed success
    assert linucb_reward(True, False, 9.0, 4.0, 0.5) == pytest.approx(0.5)  # ratio clamped
    assert linucb_reward(True, False, 1.0, 0.0, 0.5) == 1.0  # free dearest: no cost term


def test_fresh_arm_scores_alpha_times_norm() -> None:
    a, b = decode_arm(None)
    x = [0.5, 0, 0, 0, 0, 0, 1.0]
    ucb, mean, width = linucb_score(a, b, x, 2.0)
    assert mean == 0.0 and width == pytest.approx(math.sqrt(1.25))
    assert ucb == pytest.approx(2.0 * math.sqrt(1.25))


def test_update_adds_outer_product_and_scaled_context() -> None:
    a, b = linucb_update(identity(2), [0.0, 0.0], [1.0, 2.0], 0.5)
    assert a == [[2.0, 2.0], [2.0, 5.0]]
    assert b == [0.5, 1.0]


def test_rewarded_arm_is_picked_on_its_context() -> None:
    x = context_vector([6.0, 3, 0, 4.0, 1, 0], DifficultyConfig())
    arms = {m: decode_arm(None) for m in ("a", "b", "c")}
    for _ in range(30):
        for m, arm in arms.items():
            reward = 1.0 if m == "b" else 0.1
            arms[m] = linucb_update(*arm, x, reward)
    scores = {m: linucb_score(*arms[m], x, 1.0)[0] for m in arms}
    assert max(scores, key=lambda m: scores[m]) == "b"
    # Its estimate converges towards the reward it earned.
    assert linucb_score(*arms["b"], x, 1.0)[1] == pytest.approx(1.0, abs=0.05)


def test_encode_of_initial_state_is_all_zeros_and_roundtrips() -> None:
    a, b = decode_arm(None)
    assert encode_arm(a, b) == [0.0] * (D * D + D)
    assert decode_arm([0.0] * (D * D + D)) == (identity(), [0.0] * D)
    rng = random.Random(4)
    a2, b2 = _spd(rng), [rng.uniform(-1, 1) for _ in range(D)]
    a3, b3 = decode_arm(encode_arm(a2, b2))
    assert _close(a3, a2) and b3 == pytest.approx(b2)


def test_decode_rejects_wrong_length() -> None:
    with pytest.raises(ValueError):
        decode_arm([1.0, 2.0])


def test_store_increments_equal_direct_update() -> None:
    rng = random.Random(99)
    direct = decode_arm(None)
    stored: list[float] | None = None  # a key the store has never written
    for _ in range(40):
        x = context_vector(
            [
                rng.uniform(0, 9),
                rng.randint(0, 6),
                0,
                rng.uniform(0, 6),
                rng.randint(0, 1),
                rng.randint(0, 6),
            ],
            DifficultyConfig(),
        )
        r = linucb_reward(rng.random() > 0.2, rng.random() > 0.8, rng.uniform(0, 3), 3.0, 0.5)
        direct = linucb_update(*direct, x, r)
        stored = apply_increments(stored, linucb_increments(x, r))
    assert stored is not None and len(stored) == D * D + D
    a, b = decode_arm(stored)
    assert _close(a, direct[0], 1e-9) and b == pytest.approx(direct[1])
    assert encode_arm(*direct) == pytest.approx(stored)


def test_increments_layout_is_outer_product_then_scaled_context() -> None:
    inc = linucb_increments([1.0, 2.0], 3.0)
    assert inc == [1.0, 2.0, 2.0, 4.0, 3.0, 6.0]


def test_apply_increments_length_mismatch_raises() -> None:
    with pytest.raises(ValueError):
        apply_increments([0.0] * 3, [0.0] * 4)


def test_dot() -> None:
    assert dot([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]) == 32.0
