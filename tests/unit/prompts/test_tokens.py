"""Token budgets: Mistral's own counts, offline; budgets that hold on the joined text; cuts at paragraph ends."""

from __future__ import annotations

import logging
import socket
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prompts import tokens
from prompts.tokens import (
    FallbackTokens,
    MistralTokens,
    TokenCounter,
    TokenizerUnavailable,
    cut_at_paragraph,
    fit,
)

SAMPLES = [
    "Hello, world!",
    "My dog Luna died last week. She was fourteen.",
    "Fourteen years is a whole life together. I'm here if you want to talk about her.\n\nTake your time.",
    "Le café était fermé, alors on a marché jusqu'au port. 東京に行きたい。 🙂",
    "  leading spaces, trailing newline\n",
    "Call me at 555-0142 on 2025-03-02 at 18:30, okay?",
]

# Ordinary companion-chat English: the text the fallback must never under-count.
ENGLISH = """\
Hey Ava. Sorry I've been quiet. My dog Luna died last week, and I haven't really wanted to talk to anyone.

She was fourteen. Luna and I walked in the park every single morning, rain or shine, for almost all of those years.
I keep grabbing her leash at 7:15 before I remember. My sister says I should get another dog "when I'm ready",
but honestly? I don't know what ready even looks like.

Work has been a mess too: the quarterly review moved to Thursday, my manager (Priya) is out sick, and the
new intern keeps asking me questions I can't answer. I stayed until 9 p.m. on Tuesday and still didn't finish.

Anyway, I started reading again. It's a mystery novel set in Lisbon, about a retired locksmith who finds a
key that opens nothing in the city. I'm on chapter twelve. It's silly, but it helps me fall asleep.

Can you remind me to call Mum on Sunday? Her birthday is the 23rd and I still haven't bought her anything.
"""


@pytest.fixture(scope="module")
def mistral() -> MistralTokens:
    return MistralTokens()


@pytest.fixture(scope="module")
def library() -> Any:
    """mistral-common's own Tekken tokenizer, built by its own constructor rather than from our path."""
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    return MistralTokenizer.v3(is_tekken=True).instruct_tokenizer.tokenizer


def test_mistral_counts_are_the_tokenizers_own(mistral: MistralTokens, library: Any) -> None:
    for text in SAMPLES:
        assert mistral.count(text) == len(library.encode(text, bos=False, eos=False)), text
    assert mistral.count("") == 0
    assert mistral.name == f"mistral:{tokens.TOKENIZER_FILE.removesuffix('.json')}"


def test_counts_are_raw_text_without_bos_eos_or_template(mistral: MistralTokens) -> None:
    assert mistral.count("Hello") == 1
    assert mistral.count("Hello, world!") == 4


def test_loading_touches_no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"network touched: {args!r}")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    counter = MistralTokens()
    assert counter.count("Luna and I walked in the park.") > 0


def test_a_tokenizer_file_with_another_hash_is_refused() -> None:
    with pytest.raises(TokenizerUnavailable, match="sha256"):
        MistralTokens(expected_sha256="0" * 64)


def test_the_default_is_mistral_and_built_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_default", None)
    first = tokens.default_counter()
    assert isinstance(first, MistralTokens)
    assert tokens.default_counter() is first


def test_the_default_falls_back_with_one_warning(monkeypatch: pytest.MonkeyPatch,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    def unavailable() -> MistralTokens:
        raise TokenizerUnavailable("mistral-common is not installed")

    monkeypatch.setattr(tokens, "_default", None)
    monkeypatch.setattr(tokens, "MistralTokens", unavailable)
    with caplog.at_level(logging.WARNING, logger="prompts.tokens"):
        first = tokens.default_counter()
        second = tokens.default_counter()
    assert isinstance(first, FallbackTokens) and second is first
    assert "approximate" in first.name
    warnings = [r for r in caplog.records if r.name == "prompts.tokens" and r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "not installed" in warnings[0].getMessage()


def test_the_fallback_over_estimates_mistral_on_english(mistral: MistralTokens) -> None:
    fallback = FallbackTokens()
    paragraphs = ENGLISH.split("\n\n")
    sentences = [s for p in paragraphs for s in p.replace("\n", " ").split(". ")]
    for text in [ENGLISH, *paragraphs, *sentences]:
        assert fallback.count(text) >= mistral.count(text), text
    assert fallback.count(ENGLISH) <= 2 * mistral.count(ENGLISH)  # safe, but not uselessly so


def test_the_fallback_is_deterministic_and_counts_nothing_as_zero() -> None:
    fallback = FallbackTokens()
    assert fallback.count("") == 0
    assert fallback.count(ENGLISH) == FallbackTokens().count(ENGLISH)


class WordsCounter:
    """Counts whitespace-separated words: joining with "" merges neighbours, so counts are not additive."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


def test_fit_checks_the_joined_text_not_the_sum() -> None:
    counter: TokenCounter = WordsCounter()
    assert fit(["a", "b", "c"], 1, counter, separator="") == 3  # "abc" is one word, though the parts sum to three
    assert fit(["a", "b", "c"], 1, counter, separator=" ") == 1
    assert fit([], 5, counter) == 0
    assert fit(["a"], -1, counter) == 0


WORDS = st.sampled_from(["Luna", "park", "morning", "the", "I", "miss", "her", "so", "much", ".", ",", "!", "?",
                         "14", "café", "東京", "🙂", "\n", "  ", "don't", "'", "\"", "-", "Zbigniew"])
PART = st.lists(WORDS, max_size=12).map(lambda words: " ".join(words)) | st.text(max_size=30)
SEPARATORS = st.sampled_from(["\n", "", " ", "\n\n", "\n- "])


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(PART, max_size=10), budget=st.integers(-2, 60), separator=SEPARATORS)
def test_fit_never_exceeds_the_budget_and_is_maximal(mistral: MistralTokens, parts: list[str], budget: int,
                                                     separator: str) -> None:
    for counter in (mistral, FallbackTokens()):
        taken = fit(parts, budget, counter, separator)
        assert 0 <= taken <= len(parts)
        if taken:
            assert counter.count(separator.join(parts[:taken])) <= budget
        if taken < len(parts):
            assert counter.count(separator.join(parts[: taken + 1])) > budget


SENTENCE = st.lists(WORDS.filter(lambda w: w.strip() not in {"", ".", "!", "?"}), min_size=1, max_size=8).map(
    lambda words: " ".join(words).replace("\n", " ") + "."
)
PARAGRAPH = st.lists(SENTENCE, min_size=1, max_size=5).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(paragraphs=st.lists(PARAGRAPH, min_size=1, max_size=6), budget=st.integers(0, 80))
def test_cut_keeps_whole_paragraphs_within_the_budget(mistral: MistralTokens, paragraphs: list[str],
                                                      budget: int) -> None:
    text = "\n\n".join(paragraphs)
    for counter in (mistral, FallbackTokens()):
        kept, truncated = cut_at_paragraph(text, budget, counter)
        assert counter.count(kept) <= budget
        assert truncated == (kept != text)
        if not truncated:
            continue
        whole = [i for i in range(1, len(paragraphs) + 1) if kept == "\n\n".join(paragraphs[:i])]
        if whole:  # whole paragraphs, and as many as fit
            assert counter.count("\n\n".join(paragraphs[: whole[0] + 1])) > budget
        else:  # even the first paragraph did not fit: its leading sentences, or nothing
            assert counter.count(paragraphs[0]) > budget
            assert paragraphs[0].startswith(kept)
            assert kept == "" or kept.endswith(".")


def test_cut_returns_the_text_untouched_when_it_fits(mistral: MistralTokens) -> None:
    assert cut_at_paragraph(ENGLISH, 10_000, mistral) == (ENGLISH, False)
    assert cut_at_paragraph("", 0, mistral) == ("", False)


def test_cut_drops_whole_paragraphs(mistral: MistralTokens) -> None:
    paragraphs = ENGLISH.strip().split("\n\n")
    two = "\n\n".join(paragraphs[:2])
    kept, truncated = cut_at_paragraph(ENGLISH, mistral.count(two), mistral)
    assert (kept, truncated) == (two, True)


def test_cut_falls_back_to_sentences_then_to_nothing(mistral: MistralTokens) -> None:
    text = "Luna died last week. She was fourteen! We walked every morning?\n\nSecond paragraph."
    first_two = "Luna died last week. She was fourteen!"
    assert cut_at_paragraph(text, mistral.count(first_two), mistral) == (first_two, True)
    assert cut_at_paragraph(text, mistral.count("Luna died last week.") - 1, mistral) == ("", True)
    assert cut_at_paragraph("no sentence end at all but long enough", 3, mistral) == ("", True)
