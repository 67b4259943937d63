"""The resolution rules (``traces.resolution``): which messages read as resolution, and what they resolve."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from engine.domain.vocabulary import RESOLUTION_KINDS
from traces.resolution import InForce, Resolver, common_terms, link_resolutions, reads_as_resolution, resolution_kind

T0 = datetime(2025, 4, 1, 19, tzinfo=UTC)


@pytest.mark.parametrize(("text", "kind"), [
    ("The biopsy came back clear!", "test_result"),
    ("Good news, my scan results were normal.", "test_result"),
    ("The lump is benign.", "test_result"),
    ("Turns out it was a false alarm.", "false_alarm"),
    ("Mark finally apologised for what he said.", "apology"),
    ("We talked it out last night and we made up.", "reconciliation"),
    ("I got the job after all!", "good_outcome"),
    ("I passed my driving test!", "good_outcome"),
    ("Everything worked out in the end.", "good_outcome"),
    ("The visa thing is all sorted now.", "problem_solved"),
    ("We found her back at the park, safe and sound.", "found_safe"),
    ("I'm not worried anymore.", "no_longer_worried"),
    ("What a relief.", "relief"),
])
def test_a_reported_resolution_is_read_with_its_kind(text: str, kind: str) -> None:
    assert resolution_kind(text) == kind


@pytest.mark.parametrize("text", [
    "The results didn't come back clear.",  # negated
    "I hope it comes back clear.",  # hoped for
    "If the test comes back negative I'll celebrate.",  # conditional
    "Still waiting, until it comes back clear I can't relax.",
    "Has she apologised yet?",  # a question
    "She never apologised.",
    "I don't think it's all good now.",
    "I was relieved when I left the party early.",  # relief about something else, no cue
    "The beach day was rained off.",
    "My dog Luna died last week.",
])
def test_hopes_questions_and_negations_are_not_resolution(text: str) -> None:
    assert resolution_kind(text) is None


def test_a_resolution_needs_a_positive_valence_and_records_a_label_not_the_words() -> None:
    assert reads_as_resolution("She apologised but I'm still furious.", -0.6, min_valence=0.0) == ""
    assert reads_as_resolution("The biopsy came back clear!", 0.7, min_valence=0.0) == \
        f"{RESOLUTION_KINDS['test_result']} (rule)"
    # A model's reading counts on top of the rules; an unknown kind falls back to them.
    assert reads_as_resolution("Thank goodness.", 0.5, min_valence=0.0, model_kind="relief") == "relief (model)"
    assert reads_as_resolution("Thank goodness.", 0.5, min_valence=0.0, model_kind="none") == ""


def _in_force(memory_id: str, text: str, *, session: str, register: str = "anxiety", days: float = 0.0,
              anchors: tuple[str, ...] = (), vector: np.ndarray | None = None) -> InForce:
    return InForce(memory_id=memory_id, text=text, created_at=T0 + timedelta(days=days), session_id=session,
                   register=register, anchors=anchors, vector=vector)


def _resolver(text: str, *, days: float, anchors: tuple[str, ...] = (), vector: np.ndarray | None = None,
              named: frozenset[str] = frozenset()) -> Resolver:
    return Resolver(memory_id="m_news", text=text, created_at=T0 + timedelta(days=days), anchors=anchors,
                    vector=vector, cue="the result came back fine (rule)", named=named)


def test_an_anchor_links_across_sessions_and_brings_the_rest_of_the_episode() -> None:
    earlier = [
        _in_force("m1", "Waiting on the biopsy, I'm terrified.", session="s1", anchors=("biopsy",)),
        _in_force("m2", "Still no news on the biopsy.", session="s2", register="anger", days=7, anchors=("biopsy",)),
        _in_force("m3", "I'm so scared it's cancer.", session="s2", days=7),  # names nothing else: same worry
        _in_force("m4", "And my boss yelled at me again.", session="s2", register="anger", days=7,
                  anchors=("boss",)),  # the same conversation, another matter
        _in_force("m5", "Nervous about the biopsy tomorrow", session="s4", days=30, anchors=("biopsy",)),  # later
    ]
    links = link_resolutions([_resolver("The biopsy came back clear!", days=20, anchors=("biopsy",))], earlier,
                             min_similarity=0.9)
    assert {link.memory_id: link.link for link in links} == {
        "m1": "shared anchor", "m2": "shared anchor", "m3": "same episode (shared anchor)"}
    assert {link.resolved_by for link in links} == {"m_news"}
    assert all(link.at == T0 + timedelta(days=20) for link in links)


def test_meaning_links_without_an_anchor_and_a_named_memory_links_by_the_model() -> None:
    close, far = np.array([1.0, 0.0], dtype=np.float32), np.array([0.0, 1.0], dtype=np.float32)
    earlier = [_in_force("m1", "Can't stop worrying about the results.", session="s1", vector=close),
               _in_force("m2", "Worried about the flight.", session="s2", vector=far),
               _in_force("m3", "So anxious.", session="s3", vector=far)]
    links = link_resolutions([_resolver("All clear!", days=5, vector=close * 0.9 + far * 0.1,
                                        named=frozenset({"m3"}))], earlier, min_similarity=0.8)
    assert {link.memory_id: link.link for link in links} == {"m1": "similar meaning (0.99)",
                                                              "m3": "named by the model"}


def test_a_word_most_memories_contain_links_nothing() -> None:
    texts = [f"Caroline: art day {i}" for i in range(15)] + [f"Melanie: hi {i}" for i in range(10)] + ["biopsy"]
    common = common_terms(texts)
    assert common == frozenset({"caroline", "art", "day", "melanie"})
    earlier = [_in_force("m1", "Melanie: I was really scared after the accident", session="s1",
                         anchors=("accident",))]
    # The speaker's name is in both, and it is all they share: no link.
    assert link_resolutions([_resolver("Caroline: Woohoo Melanie! It all worked out!", days=3,
                                       anchors=("Melanie",))], earlier, min_similarity=0.99, common=common) == []
    assert common_terms(texts[:10]) == frozenset()  # a young partition: too few memories to tell
