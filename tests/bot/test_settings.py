"""Search weights follow the embedder in use unless an admin sets them."""

from __future__ import annotations

import pytest

from bot.settings import Settings


@pytest.mark.parametrize(
    ("given", "alpha", "weights"),
    [
        # The default embedder (e5) gets the values measured for e5 …
        ({}, {"en": 0.5, "ja": 0.4, "ru": 0.6}, {"en": 0.35, "ja": 0.5, "ru": 0.35}),
        # … USE its own: more BM25, a lighter sentence term.
        ({"verbatim_embedder": "use"}, {"en": 0.3, "ja": 0.2, "ru": 0.4}, {"en": 0.2, "ja": 0.35, "ru": 0.2}),
        # Cohere Embed could not be measured offline: e5's values.
        ({"verbatim_embedder": "cohere", "cohere_api_key": "k"}, {"en": 0.5, "ja": 0.4, "ru": 0.6},
         {"en": 0.35, "ja": 0.5, "ru": 0.35}),
        # What an admin sets wins, language by language.
        ({"verbatim_embedder": "use", "search_alpha_ja": 0.9, "rerank_sentence_weight_ru": 2.0},
         {"en": 0.3, "ja": 0.9, "ru": 0.4}, {"en": 0.2, "ja": 0.35, "ru": 2.0}),
        ({"search_alpha_en": 0.0}, {"en": 0.0, "ja": 0.4, "ru": 0.6}, {"en": 0.35, "ja": 0.5, "ru": 0.35}),
    ],
)
def test_search_weights(monkeypatch: pytest.MonkeyPatch, given: dict[str, object], alpha: dict[str, float],
                        weights: dict[str, float]) -> None:
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    settings = Settings(_env_file=None, **given)  # type: ignore[call-arg]
    config = settings.search_config()
    assert {lang: config.alpha_for(lang) for lang in alpha} == alpha
    assert config.alpha_for("de") == alpha["en"]  # other languages search like English
    assert settings.sentence_weights() == weights


@pytest.mark.parametrize(("value", "kept"), [("", ""), ("C0ESCALATE", "C0ESCALATE"), (" G0SUPPORT ", "G0SUPPORT")])
def test_an_escalation_channel_is_a_channel_id(value: str, kept: str) -> None:
    assert Settings(_env_file=None, escalation_channel=value).escalation_channel == kept  # type: ignore[call-arg]


@pytest.mark.parametrize("value", ["#support", "U0ANNA", "D0DM", "c0lower"])
def test_a_bad_escalation_channel_is_one_line_naming_it(value: str) -> None:
    with pytest.raises(ValueError, match=f"ESCALATION_CHANNEL '{value}' is not a channel id"):
        Settings(_env_file=None, escalation_channel=value)  # type: ignore[call-arg]
