"""A short Luna session, shared by the tests that need one closed session with a grief episode."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from engine.domain.models import Turn

T0 = datetime(2025, 3, 2, 18, tzinfo=UTC)
CLOSED_AT = T0 + timedelta(minutes=10)
LUNA = [
    ("user", "My dog Luna died last week."),
    ("character", "I'm so sorry."),
    ("user", "Luna and I walked in the park every morning."),
]


def turns(session: str) -> list[Turn]:
    """The Luna session as turns 30 s apart, for character ava and user u1."""
    return [
        Turn(turn_id=f"{session}-{i}", session_id=session, character_id="ava", user_id="u1", role=role,  # type: ignore[arg-type]
             text=text, timestamp=T0 + timedelta(seconds=30 * i))
        for i, (role, text) in enumerate(LUNA)
    ]
