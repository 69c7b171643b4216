"""Drills: answers against independent hand computations, seeding, and grading tolerance at its edges.
The drills' words (worked solutions) and the interview prose are tested in test_content.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specdec_core import drills
from specdec_core.drill_kinds import DRILL_KINDS, rule_law, tree_depth_masses

# Reference hardware from REFERENCE.md (dense peaks, TFLOP/s; bandwidth TB/s), typed in independently.
REF_HW = {
    "H100 SXM": (989, 1979, 3.35), "H100 PCIe": (756, 1513, 2.0), "H200 SXM": (989, 1979, 4.8),
    "A100 SXM 80GB": (312, None, 2.04), "B200": (2250, 4500, 8.0), "MI300X": (1307, 2615, 5.3),
    "L4": (121, 242, 0.30),
}


# ------------------------------------------- independent reference maths ----
def ref_tokens(a: float, g: int) -> float:
    """1 + a + a^2 + ... + a^g, summed term by term."""
    return sum(a**i for i in range(g + 1))


def ref_speedup(alpha: float, gamma: int, c: float, v: float) -> float:
    return ref_tokens(alpha, gamma) / (gamma * c + v)


def ref_best_gamma(a: float, c: float, v: float) -> int:
    best, best_s = 0, -1.0
    for g in range(33):
        s = ref_speedup(a, g, c, v)
        if s > best_s:
            best, best_s = g, s
    return best


def ref_break_even(g: int, c: float, v: float) -> float:
    """The real root in (0, 1) of a^g + ... + a + 1 - (g c + v) = 0, from numpy's polynomial roots."""
    coeffs = [1.0] * (g + 1)
    coeffs[-1] -= g * c + v
    roots = [r.real for r in np.roots(coeffs) if abs(r.imag) < 1e-12 and 0 < r.real < 1]
    assert len(roots) == 1, roots
    return roots[0]


def ref_crossover(hw: str, g: int, mode: str) -> float:
    bf16, fp8, bw = REF_HW[hw]
    peak = fp8 if mode == "fp8" else bf16
    flops_per_byte = 1 if mode == "bf16" else 2
    return peak / bw / (flops_per_byte * (g + 1))


def ref_alpha(p: list[float], q: list[float]) -> float:
    return sum(min(x, y) for x, y in zip(p, q))


# (linear weights = params - untied embedding table, layers, KV heads, head_dim), from the models' config.json
REF_SHAPES = {
    "Llama-3.1-8B": (8_030_261_248 - 128_256 * 4096, 32, 8, 128),
    "Llama-3.1-70B": (70_553_706_496 - 128_256 * 8192, 80, 8, 128),
    "Llama-3.2-1B (draft)": (1_235_814_400, 16, 8, 64),          # tied: the table is the head, counted once
}


def ref_kv_batch(model: str, context: int, mode: str, kv: str) -> float:
    """Weight bytes over one sequence's KV bytes at this context: 2 x layers x kv_heads x head_dim x element."""
    w, layers, kvh, hd = REF_SHAPES[model]
    assert mode == "bf16"
    return w * 2 / (context * 2 * layers * kvh * hd * {"bf16": 2, "fp8": 1}[kv])


def ref_pages_freed(cached: int, gamma: int, accepted: int, page: int) -> int:
    """A page table simulated slot by slot: append gamma slots, pop the rejected ones, count pages emptied."""
    pages: list[int] = []                                    # slots used per page
    for _ in range(cached + gamma):
        if not pages or pages[-1] == page:
            pages.append(0)
        pages[-1] += 1
    before = len(pages)
    for _ in range(gamma - accepted):
        pages[-1] -= 1
        if pages[-1] == 0:
            pages.pop()
    return before - len(pages)


def ref_tree_mask(branching: list[int]) -> int:
    """Build the tree breadth first, then walk each node's parent pointers to the root, counting itself."""
    parent, level = [], [-1]
    for b in branching:
        nxt = []
        for par in level:
            for _ in range(b):
                nxt.append(len(parent))
                parent.append(par)
        level = nxt
    total = 0
    for j in range(len(parent)):
        while j >= 0:
            total, j = total + 1, parent[j]
    return total


def ref_answer(d: drills.Drill):
    k, P = d.kind, d.params
    if k == "tokens":
        return ref_tokens(P["alpha"], P["gamma"])
    if k == "speedup":
        return ref_speedup(P["alpha"], P["gamma"], P["c"], P["v"])
    if k == "best_gamma":
        return ref_best_gamma(P["alpha"], P["c"], P["v"])
    if k == "break_even":
        return ref_break_even(P["gamma"], P["c"], P["v"])
    if k == "crossover":
        return ref_crossover(P["hardware"], P["gamma"], P["mode"])
    if k == "alpha_pq":
        return ref_alpha(P["p"], P["q"])
    if k == "tree_tokens":     # 1 + sum over depths of the product of S(b) = a_1 + ... + a_b down to it
        sums = [sum(P["rates"][:b]) for b in P["branching"]]
        return 1 + sum(float(np.prod(sums[: i + 1])) for i in range(len(sums)))
    if k == "exact_rule":      # recursive rejection is exact; the other offered rule is biased by construction
        return "A" if P["A"] in ("iid", "wor") else "B"
    if k == "kv_batch":
        return ref_kv_batch(**P)
    if k == "rollback_pages":
        return ref_pages_freed(**P)
    if k == "sample_compare":  # sum min(p, q) - sum p q, term by term
        return sum(min(x, y) - x * y for x, y in zip(P["p"], P["q"]))
    if k == "tree_mask":
        return ref_tree_mask(P["branching"])
    if k == "argmax_draft":    # the target's probability of the draft's most likely token
        return P["p"][P["q"].index(max(P["q"]))]
    if k == "moe_experts":     # sum over experts of P(some token picks it); a token misses it w.p. C(E-1,k)/C(E,k)
        e, top, t = P["experts"], P["top_k"], P["gamma"] + 1
        return e * (1 - (math.comb(e - 1, top) / math.comb(e, top)) ** t) / top
    if k == "batch_tokens":    # each request's 1 + alpha + ... + alpha^gamma, summed
        return sum(sum(a**j for j in range(P["gamma"] + 1)) for a in P["alphas"])
    sa = ref_speedup(**P["A"])
    sb = ref_speedup(**P["B"])
    return "A" if sa > sb else "B"


# ------------------------------------------------ the classroom set, by hand ----
def test_classroom_set_by_hand():
    """The classroom seed's drills, pinned, each answer worked out by hand below."""
    s = {d.kind: d for d in drills.drill_set(drills.CLASSROOM_SEED)}
    assert s["tokens"].params == {"alpha": 0.8, "gamma": 6}
    assert s["tokens"].answer() == pytest.approx(1 + 0.8 + 0.64 + 0.512 + 0.4096 + 0.32768 + 0.262144, rel=1e-12)
    assert s["tokens"].answer() == pytest.approx(3.951424, rel=1e-12)

    assert s["speedup"].params == {"alpha": 0.65, "gamma": 1, "c": 0.05, "v": 1.0}
    assert s["speedup"].answer() == pytest.approx(1.65 / 1.05, rel=1e-12)          # 1.5714

    # alpha 0.75, c 0.1: gamma 4 -> 3.05078 / 1.4 = 2.1791; 5 -> 3.28809 / 1.5 = 2.1921; 6 -> 3.46606 / 1.6 = 2.1663
    assert s["best_gamma"].params == {"alpha": 0.75, "c": 0.1, "v": 1.0}
    assert s["best_gamma"].answer() == 5

    # gamma 5, cost 1.5: a + a^2 + a^3 + a^4 + a^5 = 0.5 at a = 0.33426
    assert s["break_even"].params == {"gamma": 5, "c": 0.1, "v": 1.0}
    a = s["break_even"].answer()
    assert a == pytest.approx(0.334263, abs=1e-6)
    assert a + a**2 + a**3 + a**4 + a**5 == pytest.approx(0.5, abs=1e-9)

    # H100 SXM BF16: 989 / 3.35 = 295.22 FLOP/byte, over gamma + 1 = 7: 42.17
    assert s["crossover"].params == {"hardware": "H100 SXM", "gamma": 6, "mode": "bf16"}
    assert s["crossover"].answer() == pytest.approx(989 / 3.35 / 7, rel=1e-12)

    # min(p, q) = 0.3 + 0.05 + 0.1 + 0.25
    assert s["alpha_pq"].params == {"p": [0.3, 0.05, 0.1, 0.55], "q": [0.4, 0.1, 0.25, 0.25]}
    assert s["alpha_pq"].answer() == pytest.approx(0.70, abs=1e-12)

    # A: (1 - 0.7^8) / 0.3 / 2.4 = 1.309; B: (1 - 0.55^5) / 0.45 / 2.3 = 0.918
    assert s["compare"].params["A"] == {"alpha": 0.7, "gamma": 7, "c": 0.2, "v": 1.0}
    assert s["compare"].params["B"] == {"alpha": 0.55, "gamma": 4, "c": 0.2, "v": 1.5}
    assert s["compare"].answer() == "A"


def test_classroom_senior_drills_by_hand():
    """The four senior drills of the classroom seed, pinned and worked by hand."""
    s = {d.kind: d for d in drills.drill_set(drills.CLASSROOM_SEED)}
    # Llama-3.1-8B, L 4096, FP8 KV: KV/token 2 x 32 x 8 x 128 x 1 = 65,536 B; weights (8,030,261,248 - 128,256 x
    # 4096) x 2 = 15,009,849,344 B; over 4096 x 65,536 = 268,435,456 B per sequence: 55.92
    assert s["kv_batch"].params == {"model": "Llama-3.1-8B", "context": 4096, "mode": "bf16", "kv": "fp8"}
    assert s["kv_batch"].answer() == pytest.approx(15_009_849_344 / 268_435_456, rel=1e-12)
    assert s["kv_batch"].answer() == pytest.approx(55.916, abs=1e-3)
    # 372 + 8 = 380 slots in 48 pages of 8; 372 + 3 = 375 slots in 47: one page freed
    assert s["rollback_pages"].params == {"cached": 372, "gamma": 8, "accepted": 3, "page": 8}
    assert s["rollback_pages"].answer() == 1
    # min: 0.2 + 0.1 + 0.3 = 0.6; p q: 0.12 + 0.05 + 0.09 = 0.26; gap 0.34
    assert s["sample_compare"].params == {"p": [0.6, 0.1, 0.3], "q": [0.2, 0.5, 0.3]}
    assert s["sample_compare"].answer() == pytest.approx(0.34, abs=1e-12)
    # branching 3, 1, 1: 3 nodes at each depth, 1 x 3 + 2 x 3 + 3 x 3 = 18 of 81 (a causal mask: 45)
    assert s["tree_mask"].params == {"branching": [3, 1, 1]}
    assert s["tree_mask"].answer() == 18


def test_senior_drills_at_the_numbers_the_pages_quote():
    """Llama-3.2-1B at L 2048 in BF16 (the roofline page's draft and context): 2 x 16 x 8 x 64 x 2 = 32 KiB per
    token, 1,235,814,400 x 2 bytes of weights: B = 2,471,628,800 / (2048 x 32,768) = 36.8; 4.6 at L 16384."""
    d = drills.Drill("kv_batch", {"model": "Llama-3.2-1B (draft)", "context": 2048, "mode": "bf16", "kv": "bf16"})
    assert d.answer() == pytest.approx(2_471_628_800 / (2048 * 32_768), rel=1e-12)
    assert round(d.answer(), 1) == 36.8
    long = drills.Drill("kv_batch", {**d.params, "context": 16384})
    assert long.answer() == pytest.approx(d.answer() / 8, rel=1e-12)          # falls as 1 / L
    assert drills.grade(long, "5").correct and drills.grade(long, "4").correct  # a batch: either whole number beside
    assert not drills.grade(long, "6").correct
    # vLLM's block of 16: 100 cached + 5 drafts = 105 (7 pages); 1 accepted -> 101 (7 pages): nothing freed
    assert drills.Drill("rollback_pages", {"cached": 100, "gamma": 5, "accepted": 1, "page": 16}).answer() == 0
    # 92 + 5 = 97 slots (7 pages), 92 + 1 = 93 (6 pages): one freed although only 4 tokens were rejected
    assert drills.Drill("rollback_pages", {"cached": 92, "gamma": 5, "accepted": 1, "page": 16}).answer() == 1
    # a greedy draft (q a point mass) loses nothing to sample-and-compare: both keep p(x0)
    assert drills.Drill("sample_compare", {"p": [0.3, 0.7], "q": [1.0, 0.0]}).answer() == pytest.approx(0.0, abs=1e-15)
    # p = q uniform over 4: min keeps 1, sample-and-compare 4 x 1/16 = 1/4
    assert drills.Drill("sample_compare", {"p": [0.25] * 4, "q": [0.25] * 4}).answer() == pytest.approx(0.75)
    # a chain of 4 is a causal mask, 10 = 4 x 5 / 2; branching 2, 2: 2 x 1 + 4 x 2 = 10 of 36
    assert drills.Drill("tree_mask", {"branching": [1, 1, 1, 1]}).answer() == 10
    assert drills.Drill("tree_mask", {"branching": [2, 2]}).answer() == 10


def test_seed_document_cases_by_hand():
    """The seed's own worked numbers, through fixed (not generated) drills."""
    assert drills.Drill("tokens", {"alpha": 0.7, "gamma": 3}).answer() == pytest.approx((1 - 0.2401) / 0.3)
    assert round(drills.Drill("speedup", {"alpha": 0.7, "gamma": 3, "c": 0.1, "v": 1.0}).answer(), 2) == 1.95
    assert drills.Drill("tokens", {"alpha": 0.8, "gamma": 4}).answer() == pytest.approx(3.3616, abs=1e-12)
    assert round(drills.Drill("speedup", {"alpha": 0.8, "gamma": 4, "c": 0.05, "v": 3.5}).answer(), 2) == 0.91
    assert round(drills.Drill("crossover", {"hardware": "H100 SXM", "gamma": 3, "mode": "bf16"}).answer()) == 74
    assert round(drills.Drill("crossover", {"hardware": "H100 SXM", "gamma": 3, "mode": "fp8"}).answer()) == 74
    assert round(drills.Drill("crossover", {"hardware": "H100 SXM", "gamma": 3, "mode": "w8a16"}).answer()) == 37
    assert drills.Drill("best_gamma", {"alpha": 0.75, "c": 0.015, "v": 1.0}).answer() == 10  # Leviathan check


@pytest.mark.parametrize("seed", list(range(40)) + ["classroom", "Ada", "exam-2"])
def test_every_drill_matches_an_independent_computation(seed):
    for d in drills.drill_set(seed):
        want = ref_answer(d)
        got = d.answer()
        if isinstance(want, str) or d.answer_type == "integer":
            assert got == want, (seed, d)
        else:
            assert got == pytest.approx(want, rel=1e-9, abs=1e-12), (seed, d)


# ------------------------------------------------------------- seeding ----
def test_same_seed_same_set_and_different_seeds_differ():
    a = [d.params for d in drills.drill_set("classroom")]
    assert a == [d.params for d in drills.drill_set("classroom")]
    assert a == [d.params for d in drills.drill_set("  Classroom ")]  # case and spaces do not matter
    assert a != [d.params for d in drills.drill_set("classroom2")]
    sets = {str([d.params for d in drills.drill_set(s)]) for s in range(30)}
    assert len(sets) == 30


def test_each_kind_has_its_own_stream():
    """Asking for a subset of kinds does not change the drills of the other kinds."""
    full = {d.kind: d.params for d in drills.drill_set(11)}
    part = {d.kind: d.params for d in drills.drill_set(11, ("crossover", "tokens"))}
    assert part == {"crossover": full["crossover"], "tokens": full["tokens"]}


@pytest.mark.parametrize("seed", range(60))
def test_generated_drills_are_well_posed(seed):
    s = {d.kind: d for d in drills.drill_set(seed)}
    be = s["break_even"].answer()
    assert 0 < be < 1
    P = s["alpha_pq"].params
    assert P["p"] != P["q"]
    assert math.isclose(sum(P["p"]), 1, abs_tol=1e-12) and math.isclose(sum(P["q"]), 1, abs_tol=1e-12)
    a, b = (ref_speedup(**s["compare"].params[k]) for k in "AB")
    assert abs(a - b) >= 0.03 * max(a, b) - 1e-12
    g = s["best_gamma"].params
    speeds = sorted((ref_speedup(g["alpha"], k, g["c"], g["v"]) for k in range(33)), reverse=True)
    assert speeds[0] - speeds[1] >= 0.005 * speeds[0] - 1e-12
    assert REF_HW[s["crossover"].params["hardware"]][1] is not None or s["crossover"].params["mode"] != "fp8"


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="kind must be one of"):
        drills.make_drill("nonsense", 1)


# ------------------------------------------------------------- grading ----
def _tol(answer: float) -> float:
    return max(0.01 * abs(answer), 0.005)


@pytest.mark.parametrize(
    "drill",
    [
        drills.Drill("crossover", {"hardware": "B200", "gamma": 1, "mode": "bf16"}),  # 140.6: the 1 % branch
        drills.Drill("break_even", {"gamma": 5, "c": 0.1, "v": 1.0}),  # 0.334: the 0.005 branch
        drills.Drill("tokens", {"alpha": 0.7, "gamma": 3}),  # 2.533
    ],
)
def test_tolerance_at_its_edges(drill):
    ans = drill.answer()
    tol = _tol(ans)
    for sign in (+1, -1):
        assert drills.grade(drill, repr(ans + sign * tol * (1 - 1e-6))).correct
        assert not drills.grade(drill, repr(ans + sign * tol * (1 + 1e-6))).correct
        assert drills.grade(drill, repr(ans + sign * tol * (1 + 1e-6))).valid


def test_tolerance_branches_are_the_stated_ones():
    big = drills.Drill("crossover", {"hardware": "B200", "gamma": 1, "mode": "bf16"})  # 2250 / 8 / 2 = 140.625
    assert big.answer() == pytest.approx(140.625)
    assert drills.grade(big, "142").correct  # 1.375 away: inside 1 % (1.406), far outside 0.005
    assert not drills.grade(big, "142.1").correct
    small = drills.Drill("break_even", {"gamma": 5, "c": 0.1, "v": 1.0})  # 0.33426
    assert drills.grade(small, "0.3385").correct  # 0.0042 away: outside 1 % (0.0033), inside 0.005
    assert not drills.grade(small, "0.3395").correct


def test_two_decimal_answers_always_pass():
    """Any answer correctly rounded to two decimals is within the tolerance."""
    for seed in range(25):
        for d in drills.drill_set(seed):
            if d.answer_type == "number":
                assert drills.grade(d, f"{d.answer():.2f}").correct, d


def test_seed_rounding_graded_as_expected():
    d = drills.Drill("tokens", {"alpha": 0.7, "gamma": 3})
    assert drills.grade(d, "2.53").correct
    assert drills.grade(d, " 2.533 ").correct
    assert not drills.grade(d, "2.5").correct  # 0.033 away, tolerance 0.025
    s = drills.Drill("speedup", {"alpha": 0.7, "gamma": 3, "c": 0.1, "v": 1.0})
    assert drills.grade(s, "1.95x").correct and drills.grade(s, "1.95 \u00d7").correct


def test_integer_and_choice_grading():
    g = drills.Drill("best_gamma", {"alpha": 0.75, "c": 0.1, "v": 1.0})
    assert drills.grade(g, "5").correct and drills.grade(g, "5.0").correct
    assert not drills.grade(g, "4").correct and not drills.grade(g, "5.01").correct
    c = drills.Drill("compare", drills.make_drill("compare", "classroom").params)
    assert drills.grade(c, "a").correct and drills.grade(c, " A ").correct
    assert not drills.grade(c, "B").correct and drills.grade(c, "B").valid
    bad = drills.grade(c, "C")
    assert not bad.valid and "A or B" in bad.message


@pytest.mark.parametrize("text", ["", "   ", "abc", "1.2.3", "nan", "inf", "--1", "2,5.3x1"])
def test_invalid_responses_get_a_message_not_a_verdict(text):
    g = drills.grade(drills.Drill("tokens", {"alpha": 0.7, "gamma": 3}), text)
    assert not g.valid and not g.correct and g.message


def test_parse_number():
    assert drills.parse_number("1,000") == 1000.0
    assert drills.parse_number("2.8x") == 2.8
    assert drills.parse_number(".5") == 0.5
    assert drills.parse_number("-3e-2") == -0.03
    with pytest.raises(ValueError, match="not a number"):
        drills.parse_number("two")


def test_break_even_without_a_solution_says_so():
    with pytest.raises(ValueError, match="no alpha in \\[0, 1\\] breaks even"):
        drills.Drill("break_even", {"gamma": 2, "c": 1.0, "v": 2.0}).answer()  # cost 4 > gamma + 1 = 3


# ------------------------------------------ a batch is a whole number ----
def test_seed_2_crossover_accepts_the_rounded_batch():
    """The reviewer's case: H100 PCIe, W8A16, gamma 7; 756 / 2.0 / (2 x 8) = 23.625, and "24" was refused."""
    d = drills.make_drill("crossover", 2)
    assert d.params == {"hardware": "H100 PCIe", "gamma": 7, "mode": "w8a16"}
    assert d.answer() == pytest.approx(756 / 2.0 / 16, rel=1e-12)
    for typed in ("24", "23", "23.62", "24.0"):
        g = drills.grade(d, typed)
        assert g.valid and g.correct, typed
        assert "whole number" in g.message and "23 or 24" in g.message
    for typed in ("25", "22", "23.3"):  # 23.3 is a fraction outside 1 %: not a whole batch either
        assert not drills.grade(d, typed).correct, typed


def test_every_crossover_accepts_both_neighbouring_integers_and_nothing_further():
    """Across 2,000 seeds (320 failed with the rounded integer before): floor and ceil pass, and an integer
    two away passes only when the 1 % tolerance itself reaches it."""
    for seed in range(2000):
        d = drills.make_drill("crossover", seed)
        ans = d.answer()
        for b in {math.floor(ans), math.ceil(ans), round(ans)}:
            assert drills.grade(d, str(b)).correct, (seed, ans, b)
        for b in (math.floor(ans) - 1, math.ceil(ans) + 1):
            assert drills.grade(d, str(b)).correct == (abs(b - ans) <= _tol(ans)), (seed, ans, b)


def test_other_drills_do_not_take_a_neighbouring_integer():
    d = drills.Drill("tokens", {"alpha": 0.7, "gamma": 3})  # 2.533: a count of tokens is an expectation
    assert not drills.grade(d, "3").correct and not drills.grade(d, "2").correct


# ------------------------------------------------- a decimal comma ----
@pytest.mark.parametrize(
    "typed, readings", [("1,57", ("1.57", "157")), ("2,533", ("2.533", "2533")), ("0,5x", ("0.5", "05"))]
)
def test_a_decimal_comma_is_flagged_and_asked_again(typed, readings):
    d = drills.Drill("speedup", {"alpha": 0.65, "gamma": 1, "c": 0.05, "v": 1.0})  # 1.5714: "1,57" meant right
    g = drills.grade(d, typed)
    assert not g.valid and not g.correct
    assert "comma" in g.message and all(r in g.message for r in readings), g.message
    assert drills.grade(d, typed.replace(",", ".")).valid


def test_parse_number_refuses_a_comma_that_does_not_group_thousands():
    with pytest.raises(ValueError, match="comma"):
        drills.parse_number("1,57")
    assert drills.parse_number("12,345.5") == 12345.5


def test_messages_never_echo_what_was_typed():
    d = drills.Drill("tokens", {"alpha": 0.7, "gamma": 3})
    for typed in ("**bold** [x](http://e)", ":red[x]", "$x$"):
        assert typed not in drills.grade(d, typed).message
    assert "[x]" not in drills.grade(drills.make_drill("compare", 1), "[x]").message


def test_tree_depth_masses_sum_to_the_answer_minus_the_root():
    for seed in ("classroom", "1", "2", "3"):
        d = drills.make_drill("tree_tokens", seed)
        assert 1 + tree_depth_masses(d.params).sum() == pytest.approx(d.answer(), abs=1e-12)


def test_rule_law_is_a_law_and_the_exact_rule_emits_p():
    d = drills.make_drill("exact_rule", "classroom")
    p = np.asarray(d.params["p"])
    for side in "AB":
        law = rule_law(d.params[side], d.params["p"], d.params["q"], d.params["k"])
        assert law.sum() == pytest.approx(1.0) and (law >= 0).all()
        assert np.allclose(law, p) == (side == d.answer())  # negative control: the other is biased


# ------------------------------------------------------------- diagnosis ----
from specdec_core.drills import mistakes  # noqa: E402

SEEDS = ("classroom", "1", "2", "3", "4", "5")


def _typed(value) -> str:
    return value if isinstance(value, str) else (str(value) if isinstance(value, int) else f"{value:.6f}")


def test_the_reviewers_speedup_mistake_is_named_and_retried():
    d = drills.make_drill("speedup", "classroom")  # E[N] = 1.65, speedup 1.571
    g = drills.grade(d, "1.65", final=False)
    assert g.valid and not g.correct and not g.final and "before dividing by the cost" in g.mistake
    assert "1.571" not in g.message and drills.RETRY_TEXT in g.message
    shown = drills.grade(d, "1.65")
    assert shown.final and shown.message.startswith("Not quite: the answer is 1.571.") and g.mistake in shown.message


@pytest.mark.parametrize("kind", DRILL_KINDS)
def test_each_kind_has_mistakes_and_each_distinct_one_is_recognised(kind):
    """Every kind has a common mistake on most seeds; typing a mistake's value is diagnosed as a mistake (the
    first one it matches), and never when the value would pass as the answer."""
    found = 0
    for seed in SEEDS:
        d = drills.make_drill(kind, seed)
        for m in mistakes(kind, d.params):
            why = drills.diagnose(d, _typed(m.value))
            if drills.grade(d, _typed(m.value)).correct:
                assert why == ""  # a mistake equal to the answer is no mistake
            else:
                assert why, (seed, m)
                found += 1
    assert found >= len(SEEDS)


@pytest.mark.parametrize("kind", DRILL_KINDS)
def test_right_answers_and_far_off_numbers_get_no_diagnosis(kind):
    """Negative controls: the right answer is never called a mistake, and a number far from every mistake gets
    the plain message."""
    for seed in SEEDS:
        d = drills.make_drill(kind, seed)
        assert drills.diagnose(d, _typed(d.answer())) == ""
        if d.answer_type != "choice":
            g = drills.grade(d, "987", final=False)
            assert g.mistake == "" and g.message == f"Not quite. {drills.RETRY_TEXT}"


def test_v_equal_one_assumed_is_only_a_mistake_when_v_is_not_one():
    d = drills.Drill("speedup", {"alpha": 0.8, "gamma": 4, "c": 0.05, "v": 3.5})  # the seed's slowdown case
    assumed = 3.3616 / 1.2  # v = 1: 2.80
    assert "v = 1 assumed" in drills.diagnose(d, f"{assumed:.3f}")
    same = drills.Drill("speedup", {"alpha": 0.8, "gamma": 4, "c": 0.05, "v": 1.0})
    assert not any(
        "v = 1" in m.looks_like for m in mistakes("speedup", same.params) if drills.diagnose(same, _typed(m.value))
    )
