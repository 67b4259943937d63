"""Luna sessions, shared by the tests that need a closed session with a grief episode."""

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

# The first session of the Luna transcripts (FORMAT.md): each test file adds its own turns and sessions.
LUNA_TRANSCRIPT_HEAD = """\
format: 1
id: luna
character: ava
user: tester-1
sessions:
  - at: "2025-03-02T18:00:00Z"
    turns:
      - user: "My dog Luna died last week."
"""

# The longer Luna conversation of the engine and adapter tests.
LUNA_LONG = [
    ("user", "Hey Ava. Sorry I've been quiet. My dog Luna died last week."),
    ("character", "Oh no. I'm so sorry. How are you holding up?"),
    ("user", "Not great honestly. She was fourteen. Luna and I walked in the park every single morning."),
    ("character", "Fourteen years is a whole life together. I'm here if you want to talk about her."),
    ("user", "Thanks. I just miss her so much."),
]


def make_turns(session: str, lines: list[tuple[str, str]], *, start: datetime = T0, user: str = "u1") -> list[Turn]:
    """``lines`` (role, text) as turns 30 s apart from ``start``, for character ava and ``user``."""
    return [
        Turn(turn_id=f"{session}-{i}", session_id=session, character_id="ava", user_id=user, role=role,  # type: ignore[arg-type]
             text=text, timestamp=start + timedelta(seconds=30 * i))
        for i, (role, text) in enumerate(lines)
    ]


def turns(session: str) -> list[Turn]:
    """The Luna session as turns 30 s apart, for character ava and user u1."""
    return make_turns(session, LUNA)
