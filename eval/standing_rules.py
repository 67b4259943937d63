"""``feltsense eval standing-rules``: the standing tone rules in force at the end of each LoCoMo conversation.

Standing rules are for the rare moment that must never be treated lightly (a death); a rule born of trivia ("the
beach day was rained off") is quoted in every system message for good, which testers notice. This report ingests
each LoCoMo conversation (10 conversations over months, ``eval.locomo``'s ingest: every session closed, so the
write-time pass runs) into a fresh engine with the default profile, then asks one neutral recall a day after the
last turn and lists what stands: per conversation the count, and each rule's register, intensity, anchors and
the words of the memory that leads it. The resolutions the write-time pass recorded are listed too.

It reads no label and scores nothing: it is the before/after picture of a tone-rule change.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from eval.locomo import CHARACTER_ID, Conversation, Progress, _ingest, load

if TYPE_CHECKING:
    from engine.domain.ports import Classifier, Embedder
    from engine.service import Engine
    from engine.settings import Settings

PROBE_MESSAGE = "Hi! How have you been?"
"""What the closing recall says: standing rules do not depend on the message, so any neutral message will do."""
TEXT_CHARS = 160


def _clip(text: str, limit: int = TEXT_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def conversation_rules(engine: Engine, conversation: Conversation, progress: Progress | None = None) -> dict[str, Any]:
    """Ingest one conversation into an empty ``engine``; the standing rules (and resolutions) at its end."""
    from engine.domain.models import Partition, RecallQuery

    _ingest(engine, conversation, progress)
    result = engine.recall(RecallQuery(character_id=CHARACTER_ID, user_id=conversation.sample_id,
                                       message=PROBE_MESSAGE, at=conversation.ask_at, include_current_session=True))
    lead_ids = [rule.source_memory_ids[0] for rule in result.standing_rules if rule.source_memory_ids]
    texts = {m.memory_id: m.text for m in engine.store.get_memories(lead_ids)}
    rules = [
        {"register": rule.register, "intensity": round(rule.intensity, 3), "valence": round(rule.valence, 3),
         "anchors": list(rule.anchors), "memories": len(rule.source_memory_ids),
         "lead_memory_id": rule.source_memory_ids[0] if rule.source_memory_ids else "",
         "text": _clip(texts.get(rule.source_memory_ids[0], "")) if rule.source_memory_ids else "",
         "instruction": rule.instruction}
        for rule in result.standing_rules
    ]
    found = engine.resolutions(Partition(character_id=CHARACTER_ID, user_id=conversation.sample_id))
    said = {m.memory_id: m.text for m in engine.store.get_memories(
        [i for r in found for i in (r.memory_id, r.resolved_by)])}
    resolutions = [
        {"memory_id": r.memory_id, "register": r.register, "resolved_by": r.resolved_by, "at": r.at.isoformat(),
         "cue": r.cue, "link": r.link, "undone": r.undone_at is not None,
         "resolved_text": _clip(said.get(r.memory_id, ""), 100),
         "resolving_text": _clip(said.get(r.resolved_by, ""), 100)}
        for r in found
    ]
    return {"sample_id": conversation.sample_id, "sessions": len(conversation.sessions),
            "turns": sum(len(s.turns) for s in conversation.sessions), "standing_rules": len(rules),
            "standing_rule_memories": result.trace.standing_rule_memories, "rules": rules,
            "resolutions": resolutions}


def run(conversations: Sequence[Conversation], *, embedder: Embedder, classifier: Classifier,
        progress: Progress | None = None) -> dict[str, Any]:
    """Every conversation in a fresh embedded engine (its own temporary data directory, the shared models)."""
    from engine.factory import build_embedded_engine

    rows = []
    with tempfile.TemporaryDirectory(prefix="feltsense-standing-") as tmp:
        for conversation in conversations:
            engine = build_embedded_engine(Path(tmp) / conversation.sample_id, embedder=embedder,
                                           classifier=classifier)
            try:
                rows.append(conversation_rules(engine, conversation, progress))
                profile = engine.profiles.profile_for(CHARACTER_ID)
            finally:
                engine.close()
    return {"classifier": classifier.name, "tone": profile.tone.model_dump() if rows else {},
            "conversations": rows, "standing_rules": sum(r["standing_rules"] for r in rows),
            "resolutions": sum(len(r["resolutions"]) for r in rows)}


def render(result: dict[str, Any]) -> str:
    lines = [f"standing tone rules at the end of each LoCoMo conversation (classifier {result['classifier']})",
             "tone profile: " + ", ".join(f"{k}={v}" for k, v in result["tone"].items()), ""]
    for row in result["conversations"]:
        lines.append(f"{row['sample_id']}: {row['standing_rules']} standing rules "
                     f"({row['standing_rule_memories']} memories; {row['sessions']} sessions, {row['turns']} turns)")
        for rule in row["rules"]:
            anchors = ", ".join(rule["anchors"][:8]) or "none"
            lines.append(f"  - {rule['register']} {rule['intensity']:.2f} [{anchors}] {rule['text']!r}")
        for found in row["resolutions"]:
            state = " (undone)" if found["undone"] else ""
            lines.append(f"  * resolved{state}: {found['register']} {found['resolved_text']!r} by "
                         f"{found['resolving_text']!r} ({found['cue']}; {found['link']})")
    lines.append("")
    lines.append(f"{result['standing_rules']} standing rules over {len(result['conversations'])} conversations; "
                 f"{result['resolutions']} resolutions")
    return "\n".join(lines)


def measure(path: Path, *, settings: Settings, limit: int | None, out: TextIO, err: TextIO) -> dict[str, Any]:
    """What ``feltsense eval standing-rules`` runs: load LoCoMo, the models ``settings`` name, ingest, print."""
    from engine.factory import build_classifier, build_embedder

    conversations = load(path, limit=limit)
    print("loading the embedder and classifier...", file=err)
    embedder, classifier = build_embedder(settings), build_classifier(settings)
    progress = Progress(sum(len(c.sessions) for c in conversations), err)
    try:
        result = run(conversations, embedder=embedder, classifier=classifier, progress=progress)
    finally:
        progress.close()
    print(render(result), file=out)
    return result
