"""Training the built-in pair: the distillation loss, its schedule, and a short real run of the CLI."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import torch

from gpu_demo.models.char import WindowConfig, WindowMLP, load_char_model
from gpu_demo.pairs import ASSETS
from gpu_demo.training.distill import acceptance, distill, distill_loss
from gpu_demo.training.loop import lr_cosine

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # the CLI runs below also set --threads 1

def test_distill_loss_is_tv_plus_weighted_cross_entropy_on_a_hand_case() -> None:
    p = torch.tensor([[0.5, 0.5, 0.0]])
    q = torch.tensor([[0.25, 0.5, 0.25]])
    tv = 0.25  # 0.5 * (0.25 + 0 + 0.25)
    ce = -(0.5 * math.log(0.25) + 0.5 * math.log(0.5))
    got = distill_loss(p, q.log(), ce_weight=0.1).item()
    assert got == pytest.approx(tv + 0.1 * ce, rel=1e-6)
    assert distill_loss(p, q.log(), ce_weight=0.0).item() == pytest.approx(tv, rel=1e-6)
    # alpha = 1 - TV: sum min(p, q) = 0.25 + 0.5 + 0 = 0.75
    assert torch.minimum(p, q).sum().item() == pytest.approx(1 - tv)


def test_distill_loss_tv_part_vanishes_when_q_equals_p() -> None:
    p = torch.softmax(torch.randn(4, 7), -1)
    assert distill_loss(p, p.log(), ce_weight=0.0).item() == pytest.approx(0.0, abs=1e-7)


def test_distill_loss_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="one shape"):
        distill_loss(torch.ones(2, 3) / 3, torch.zeros(2, 4))
    with pytest.raises(ValueError, match="ce_weight"):
        distill_loss(torch.ones(2, 3) / 3, torch.zeros(2, 3), ce_weight=-1.0)


def test_lr_cosine_warms_up_then_decays_to_the_floor() -> None:
    assert lr_cosine(0, 100, 1e-3, 1e-4, warmup=10) == pytest.approx(1e-4)
    assert lr_cosine(9, 100, 1e-3, 1e-4, warmup=10) == pytest.approx(1e-3)
    assert lr_cosine(100, 100, 1e-3, 1e-4, warmup=10) == pytest.approx(1e-4)
    mids = [lr_cosine(s, 100, 1e-3, 1e-4, warmup=10) for s in range(10, 101)]
    assert all(a >= b for a, b in zip(mids, mids[1:]))


def test_distill_raises_acceptance_of_a_small_student() -> None:
    """A random 4-slot window MLP teacher; a fresh student distilled for 60 steps accepts clearly more."""
    torch.manual_seed(0)
    teacher = WindowMLP(WindowConfig(vocab_size=8, window=4, d_emb=8, d_hidden=32))
    for prm in teacher.parameters():  # a peaked, context-dependent teacher
        prm.data.mul_(4.0)
    teacher.requires_grad_(False)
    student = WindowMLP(WindowConfig(vocab_size=8, window=4, d_emb=8, d_hidden=32))
    gen = torch.Generator().manual_seed(1)
    val = torch.randint(0, 8, (8, 32), generator=gen)
    before = acceptance(teacher, student, val)
    log = distill(student, teacher, lambda s: torch.randint(0, 8, (16, 32), generator=gen), steps=60, lr=1e-2,
                  ce_weight=0.1, val_windows=val, eval_every=30, desc="test")
    after = acceptance(teacher, student, val)
    assert [e["step"] for e in log] == [0, 30, 60]
    assert log[0]["held_out_alpha_t1"] == pytest.approx(before, abs=1e-4)
    assert log[-1]["held_out_alpha_t1"] == pytest.approx(after, abs=1e-4)
    assert after > before + 0.1


@pytest.mark.slow
def test_train_cli_writes_a_distilled_draft(tmp_path: Path) -> None:
    """`python -m gpu_demo train --which draft` on a tiny schedule: both phases run, metadata says so."""
    from gpu_demo.__main__ import main

    for name in ("target", "expert"):
        for ext in ("json", "safetensors"):
            shutil.copy(ASSETS / f"{name}.{ext}", tmp_path / f"{name}.{ext}")
    rc = main(["train", "--which", "draft", "--steps", "4", "--distill-steps", "2", "--threads", "1",
               "--out", str(tmp_path)])
    assert rc == 0
    meta = json.loads((tmp_path / "draft.json").read_text())
    assert meta["steps_run"] == 4 and meta["distill"]["steps"] == 2 and meta["distill"]["teacher"] == "target"
    assert [e["step"] for e in meta["distill"]["log"]] == [0, 2]
    assert 0.0 < meta["distill"]["held_out_alpha_t1"] < 1.0
    model, _ = load_char_model(tmp_path, "draft")
    assert isinstance(model, WindowMLP) and model.vocab_size == meta["config"]["vocab_size"]


def test_training_a_distilled_draft_without_its_teacher_fails_before_any_step(tmp_path: Path) -> None:
    from gpu_demo.__main__ import main

    rc = main(["train", "--which", "draft", "--steps", "4", "--threads", "1", "--out", str(tmp_path)])
    assert rc == 2 and not (tmp_path / "draft.json").exists()


def test_committed_draft_metadata_matches_its_weights() -> None:
    """The shipped draft was distilled on the shipped target; its recorded alpha and loss are recomputed here."""
    from gpu_demo.models.char import CharTokenizer
    from gpu_demo.training.char import held_out_loss, random_batch
    from gpu_demo.training.corpus import load_books, train_val_split

    meta = json.loads((ASSETS / "draft.json").read_text())
    d = meta["distill"]
    assert d["teacher"] == "target" and d["steps"] >= 1000
    assert d["held_out_alpha_t1"] > d["held_out_alpha_t1_before"]
    target, _ = load_char_model(ASSETS, "target")
    draft, _ = load_char_model(ASSETS, "draft")
    train_text, val_text = train_val_split(load_books())
    val_ids = torch.tensor(CharTokenizer(meta["vocab"]).encode(val_text), dtype=torch.long)
    windows = random_batch(val_ids, (16, meta["train"]["seq_len"]), torch.Generator().manual_seed(0))[0]
    assert acceptance(target, draft, windows) == pytest.approx(d["held_out_alpha_t1"], abs=2e-4)
    loss = held_out_loss(draft, val_ids, meta["train"]["seq_len"])
    assert loss == pytest.approx(meta["held_out_nats_per_char"], abs=2e-4)
    assert loss < 1.35  # still a language model of the text, not only of the target


def test_fit_equals_a_hand_written_loop() -> None:
    """training.loop.fit takes exactly the steps of the plain AdamW loop it replaced (same weights after 12 steps)."""
    from gpu_demo.training.loop import fit

    def model_and_opt():
        torch.manual_seed(0)
        m = torch.nn.Linear(5, 3)
        return m, torch.optim.AdamW(m.parameters(), lr=0.1)

    x = torch.randn(12, 8, 5, generator=torch.Generator().manual_seed(1))  # (steps, B, d)
    y = torch.randint(0, 3, (12, 8), generator=torch.Generator().manual_seed(2))  # (steps, B)
    schedule = lambda step: lr_cosine(step, 12, 0.1, 0.01, warmup=3)  # noqa: E731

    ref, opt = model_and_opt()
    for step in range(12):
        for g in opt.param_groups:
            g["lr"] = schedule(step)
        loss = torch.nn.functional.cross_entropy(ref(x[step]), y[step])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(ref.parameters(), 1.0)
        opt.step()

    m, opt = model_and_opt()
    seen = []
    res = fit(m.parameters(), opt, lambda step: torch.nn.functional.cross_entropy(m(x[step]), y[step]), 12,
              schedule, evaluate=lambda pr: seen.append(pr.step) or {"step": pr.step},
              eval_due=lambda step: (step + 1) % 5 == 0)
    assert seen == [5, 10, 12] and [e["step"] for e in res.log] == [5, 10, 12]
    for a, b in zip(ref.parameters(), m.parameters()):
        assert torch.equal(a, b)
    assert math.isfinite(res.loss_ema)
