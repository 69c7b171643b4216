"""The interview prose in content/: worked drill solutions in the seed's style, the concept questions,
the checklist, the walkthrough, the flashcards and the 30-second answer."""

from __future__ import annotations

import pytest

from content import drill_text, interview_content
from specdec_core import drills


def ref_speedup(alpha: float, gamma: int, c: float, v: float) -> float:
    """(1 + a + ... + a^gamma) / (gamma c + v), summed term by term."""
    return sum(alpha**i for i in range(gamma + 1)) / (gamma * c + v)


# ----------------------------------------------------- worked solutions ----
def test_worked_solution_reproduces_the_seed_lines():
    lines = drill_text.solution(drills.Drill("speedup", {"alpha": 0.7, "gamma": 3, "c": 0.1, "v": 1.0}))
    assert lines[1:] == [
        "E[N]    = (1 - 0.7^4) / (1 - 0.7) = (1 - 0.2401) / 0.3 = 2.533 tokens per pass",
        "cost    = 3 x 0.1 + 1 = 1.30 target steps",
        "speedup = 2.533 / 1.30 = 1.95x",
        "sanity: alpha -> 0 gives 1 / 1.30 = 0.77x (a slowdown)",
        "        alpha -> 1 gives 4 / 1.30 = 3.08x (the gamma + 1 ceiling)",
    ]


@pytest.mark.parametrize("seed", [0, 1, "classroom"])
def test_solutions_end_at_the_answer(seed):
    for d in drills.drill_set(seed):
        text = "\n".join(drill_text.solution(d))
        ans = d.answer()
        if d.kind == "tokens":
            assert f"= {ans:.3f} tokens per pass" in text
        elif d.kind == "speedup":
            assert f"= {ans:.2f}x" in text
        elif d.kind == "best_gamma":
            assert f"best gamma = {ans} " in text
        elif d.kind == "break_even":
            assert f"alpha = {ans:.3f}" in text
        elif d.kind == "crossover":
            assert text.splitlines()[-3].endswith(f"= {ans:.1f}")
        elif d.kind == "alpha_pq":
            assert f"= {ans:.2f}" in text and "1 - TV" in text
        elif d.kind == "tree_tokens":
            assert f"= {ans:.3f} tokens per pass" in text
        elif d.kind == "exact_rule":
            assert f"{ans} emits exactly p" in text
        elif d.kind == "kv_batch":
            assert "B_KV     = " in text and text.splitlines()[4].endswith(f"= {ans:.1f}")
        elif d.kind == "rollback_pages":
            assert f"= {ans} page(s)" in text
        elif d.kind == "sample_compare":
            assert f"= {ans:.4f} more acceptance per draft token" in text
        elif d.kind == "tree_mask":
            assert text.splitlines()[2].endswith(f"= {ans}")
        elif d.kind == "argmax_draft":
            assert f"alpha(argmax) = p(token {d.params['q'].index(max(d.params['q']))}) = {ans:g}" in text
        elif d.kind == "moe_experts":
            assert f"= {ans:.4g}: the routed-expert weights" in text
        elif d.kind == "batch_tokens":
            assert f"sum = {ans:.4f} tokens per pass" in text
        else:
            assert text.endswith(
                f"{ans} is faster: {max(ref_speedup(**d.params[k]) for k in 'AB'):.2f}x"
                f" against {min(ref_speedup(**d.params[k]) for k in 'AB'):.2f}x"
            )
        assert drill_text.formula(d).strip()


# ------------------------------------------------------------- content ----
def test_concept_questions_have_one_right_answer_and_explain_every_option():
    assert len(interview_content.CONCEPT_QUESTIONS) >= 5
    for q in interview_content.CONCEPT_QUESTIONS:
        assert sum(o.correct for o in q.options) == 1, q.key
        assert len(q.options) >= 3
        for i, o in enumerate(q.options):
            ok, why = interview_content.check_choice(q, i)
            assert ok == o.correct and len(why) > 30
    with pytest.raises(ValueError, match="index must be in"):
        interview_content.check_choice(interview_content.CONCEPT_QUESTIONS[0], 99)


def test_checklist_has_the_five_points_with_two_sentences_each():
    assert len(interview_content.CHECKLIST) == 5
    for item in interview_content.CHECKLIST:
        assert len([x for x in item.explanation.split(". ") if x.strip()]) == 2, item.point
        assert item.link.page.startswith("views/") and item.link.params


def test_walkthrough_reveals_are_filled_by_the_core():
    assert sum(s.minutes for s in interview_content.WALKTHROUGH) == 15
    texts = [interview_content.reveal_text(s) for s in interview_content.WALKTHROUGH]
    assert all("{" not in t for t in texts)
    assert "2.533" in texts[1] and "1.95x" in texts[1]
    assert "3.08x" in texts[2] and "0.91x" in texts[3] and "cost 3.7," in texts[3]
    assert "gamma = 10" in texts[4] and "3.33x" in texts[4] and "3.26x" in texts[4]
    assert "73.8" in texts[7] and "36.9" in texts[8]


def test_flashcards_one_per_formula():
    fronts = [c.front for c in interview_content.FLASHCARDS]
    assert len(set(fronts)) == len(fronts) >= 8
    assert all(c.latex.strip() and c.note.strip() for c in interview_content.FLASHCARDS)




# ------------------------------------------------- the 30-second answer ----
def test_thirty_second_answer_is_one_short_text_and_the_phrases_and_timer_follow_it():
    text = interview_content.THIRTY_SECOND_ANSWER
    words = interview_content.word_count(text)
    assert 40 <= words <= interview_content.MAX_WORDS == 60, words
    assert 60 * words / interview_content.SPEAKING_WORDS_PER_MINUTE <= interview_content.PRACTICE_SECONDS == 30
    lowered, at = text.lower(), 0
    for phrase in interview_content.KEY_PHRASES:                      # each phrase is in the text, in the text's order
        found = lowered.find(phrase.lower(), at)
        assert found >= 0, phrase
        at = found + len(phrase)
    for fact in ("min(1, p/q)", "(p - q)+", "gamma + 1", "gamma c + v"):       # the seed's facts
        assert fact in text


# ---------------------------------------------------- concept questions ----
def test_the_keyed_option_is_not_given_away_by_its_length_or_place():
    """A test-wise learner picks the longest option: the keyed one may be the longest in at most a quarter
    of the questions, every option stays within a factor 1.6 of its question's shortest, and the key moves."""
    longest = 0
    for q in interview_content.CONCEPT_QUESTIONS:
        lengths = [len(o.text) for o in q.options]
        assert max(lengths) <= 1.6 * min(lengths), (q.key, lengths)
        longest += lengths[q.answer_index] == max(lengths)
    assert longest <= len(interview_content.CONCEPT_QUESTIONS) // 4, longest
    places = [q.answer_index for q in interview_content.CONCEPT_QUESTIONS]
    assert max(places.count(i) for i in set(places)) <= (len(places) + 1) // 2, places


def test_a_trap_label_does_not_repeat_the_question():
    for q in interview_content.CONCEPT_QUESTIONS:
        assert q.trap and q.trap.lower() not in q.question.lower(), q.key


def test_walkthrough_crossover_inputs_are_drill_inputs():
    """One key for the hardware: a walkthrough step's crossover inputs are a drill's, answered by it."""
    from specdec_core import drills

    steps = [s for s in interview_content.WALKTHROUGH if s.compute and s.compute[0] == "crossover"]
    assert steps
    for s in steps:
        d = drills.Drill("crossover", s.compute[1])
        assert set(s.compute[1]) == set(drills.make_drill("crossover", "classroom").params)
        assert f"{d.answer():.1f}" in interview_content.reveal_text(s)


# ------------------------------------------------- context beside batch ----
def _keyed_texts() -> list[tuple[str, str]]:
    """Every keyed answer: the right options with their reasons, the checklist, the flashcards, the walkthrough's
    reveals and the 30-second answer."""
    texts = [(f"question {q.key}", f"{o.text} {o.why}")
             for q in interview_content.CONCEPT_QUESTIONS for o in q.options if o.correct]
    texts += [(f"checklist {c.point}", f"{c.point} {c.explanation}") for c in interview_content.CHECKLIST]
    texts += [(f"card {f.front}", f"{f.front} {f.note}") for f in interview_content.FLASHCARDS]
    texts += [
        (f"step {s.title}", f"{s.question} {interview_content.reveal_text(s)}") for s in interview_content.WALKTHROUGH
    ]
    return texts + [("30-second answer", interview_content.THIRTY_SECOND_ANSWER)]


def test_every_keyed_answer_that_mentions_batch_names_context_too():
    """KV traffic grows with context x batch: no keyed answer speaks of batch without context."""
    batch = [(name, t) for name, t in _keyed_texts() if "batch" in t.lower()]
    assert len(batch) >= 8
    assert [name for name, t in batch if "context" not in t.lower()] == []


def test_the_context_numbers_in_the_keyed_answers_come_from_the_step_time_model():
    from content import interview_senior
    from specdec_core.roofline import HARDWARE
    from specdec_core.steptime import SHAPES, best_gamma_for_shape, kv_read_batch, spec_curve

    t8, d1, h100 = SHAPES["Llama-3.1-8B"], SHAPES["Llama-3.2-1B (draft)"], HARDWARE["H100 SXM"]
    # 15,009,849,344 weight bytes over L x 131,072 KV bytes: 55.9 at 2k, 7.0 at 16k
    assert (
        interview_senior.kv_batch(2048)
        == pytest.approx(15_009_849_344 / (2048 * 131_072))
        == kv_read_batch(t8, "bf16", 2048)
    )
    assert round(interview_senior.kv_batch(2048)) == 56 and round(interview_senior.kv_batch(16384)) == 7
    v_short, v_long = (float(spec_curve(t8, d1, h100, "bf16", 3, 0.8, L, 256.0).v) for L in (2048, 16384))
    assert round(v_short, 2) == 1.45 and round(v_long, 2) == 1.07  # the table: 1.451 at B = 256
    batch_q = next(q for q in interview_content.CONCEPT_QUESTIONS if q.key == "batch")
    why = batch_q.options[batch_q.answer_index].why
    assert "B = 56 for 2k" in why and "B = 7 for 16k" in why and f"{v_long:.2f} at B = 256" in why
    assert f"against {v_short:.2f}" in why and "0.25" in why and "MagicDec" in why
    gammas = [best_gamma_for_shape(t8, d1, h100, "bf16", 0.8, L, 200.0)[0] for L in (2048, 16384)]
    assert gammas[0] < gammas[1]  # the best gamma falls later at long context
    turn_off = next(q for q in interview_content.CONCEPT_QUESTIONS if q.key == "turn_off")
    assert f"is {gammas[0]} at 2k tokens and {gammas[1]} at 16k" in turn_off.options[turn_off.answer_index].why


def test_sglang_tree_scores_36_candidates_and_keeps_15_and_the_content_says_so():
    from content import interview_senior
    from specdec_core.trees import sglang_tree_counts

    assert sglang_tree_counts(3, 4, 16) == (36, 15)
    blob = repr(next(q for q in interview_senior.SENIOR_QUESTIONS if q[0] == "sglang_flags"))
    assert "4^3 is the unpruned size" not in blob
    assert "4 + 16 + 16 = 36" in blob and "15 highest-scoring" in blob


def test_vllm_lossless_is_quoted_exactly():
    from content import interview_senior

    assert "theoretically lossless up to the precision limits of hardware numerics" in repr(
        interview_senior.SENIOR_QUESTIONS
    )


def test_the_tour_says_drills_score_within_two_tries_as_the_widget_grades():
    import inspect

    from content import interview_content
    from ui.interview import widgets as interview_widgets

    src = inspect.getsource(interview_content)
    assert "Your first answer is the score" not in src
    assert "within two tries" in src and "within two tries" in inspect.getsource(interview_widgets)


def test_argmax_drafting_is_not_only_llama_cpp():
    from content import interview_senior

    blob = repr(next(q for q in interview_senior.SENIOR_QUESTIONS if q[0] == "sample_compare"))
    assert "vLLM V1" in blob and "TensorRT-LLM" in blob


def test_every_mention_of_vllms_lossless_claim_quotes_it_exactly():
    """The trees page and the engines page paraphrased vLLM ('lossless up to the precision of hardware numerics')."""
    from content import interview_senior
    from ui.engines.text import SELF_DRAFT
    from ui.trees.assumptions import LOSSLESS

    quote = "theoretically lossless up to the precision limits of hardware numerics"
    for text in (LOSSLESS, SELF_DRAFT, repr(interview_senior.SENIOR_QUESTIONS)):
        assert text.count("hardware numerics") == text.count(quote) >= 1, text


def test_the_b256_16k_point_states_its_kv_and_gpus_from_the_core():
    """B = 256 at 16k: 687 GB of bf16 KV with the 1B draft (550 GB the target's), 706 GB with weights, at least 9
    80 GB GPUs, 88 GB per GPU at TP 8, fewest 10 (5 x TP 2); MagicDec's draft-KV bottleneck scoped to a separate
    model, with the one-layer head's ratio 0.031 (17 GB there)."""
    from content import interview_senior
    from specdec_core.steptime import SHAPES, gpu_placement, head_kv_gb

    t8, d1 = SHAPES["Llama-3.1-8B"], SHAPES["Llama-3.2-1B (draft)"]
    p, alone = gpu_placement(t8, d1, "bf16", 256, 16384), gpu_placement(t8, None, "bf16", 256, 16384)
    note = interview_senior.CONTEXT_NOTE
    assert f"its bf16 KV is {p.kv_gb:.0f} GB" in note and "687 GB" in note and f"{alone.kv_gb:.0f} GB the 8B" in note
    assert f"{p.total_gb:.0f} GB with the weights, so at least {p.capacity_gpus} 80 GB GPUs" in note
    assert "at least 9 80 GB GPUs" in note and "88 GB per GPU" in note and "are 10 (5 replicas of TP 2" in note
    assert "a separate draft model's KV is the large-batch" in note and "a ratio of 0.031" in note
    assert f"{head_kv_gb(t8, 256, 16384):.0f} GB at B = 256" in note
    long_q = next(q for q in interview_senior.SENIOR_QUESTIONS if q[0] == "long_context")
    assert "0.031 of the target's for Llama-3.1-8B against 0.25 for the 1B" in repr(long_q)


def test_the_kv_batch_drill_scopes_magicdec_to_a_separate_draft():
    from content.drill_text import solution

    params = {"model": "Llama-3.1-8B", "context": 16384, "mode": "bf16", "kv": "bf16"}
    lines = solution(drills.Drill("kv_batch", params))
    last = lines[-1]
    assert "separate draft model" in last and "MagicDec" in last and "one layer of KV, 1/32 of Llama-3.1-8B's" in last


def test_the_2026_questions_are_graded_sourced_and_drawn_by_the_mock():
    """Each 2026 question is a concept question like the others (one keyed option, every option explained), names
    its source, and the mock interview draws them, as it draws the 2026 drill kinds."""
    from content import mock
    from content.interview_2026 import QUESTIONS_2026

    new = {q[0] for q in QUESTIONS_2026}
    asked = {q.key: q for q in interview_content.CONCEPT_QUESTIONS if q.key in new}
    assert set(asked) == new and len(new) >= 8
    for q in asked.values():
        assert len(q.source) > 20 and sum(o.correct for o in q.options) == 1, q.key
    drawn_q, drawn_d = set(), set()
    for seed in range(60):
        m = mock.mock_set(str(seed))
        drawn_q |= {q.key for q in m.concepts}
        drawn_d |= {d.kind for d in m.drills}
    assert new <= drawn_q and {"argmax_draft", "moe_experts", "batch_tokens"} <= drawn_d


def test_the_2026_keyed_numbers_come_from_the_core():
    from content.interview_2026 import QUESTIONS_2026
    from specdec_core.moe import expert_read_ratio
    from specdec_core.roofline import HARDWARE, crossover_batch

    keyed = {q[0]: next(o[2] for o in q[3] if o[1]) for q in QUESTIONS_2026}
    assert f"about {expert_read_ratio(256, 8, 2):.2f}x one token's expert weights" in keyed["mtp_moe"]
    h100 = HARDWARE["H100 SXM"]
    assert (f"{crossover_batch(h100, 3, 'bf16'):.0f} with bf16 weights and "
            f"{crossover_batch(h100, 3, 'w8a16'):.0f} with 8-bit ones") in keyed["quantised_target"]
