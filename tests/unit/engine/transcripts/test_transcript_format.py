"""Transcript format version 1 (../shared/transcripts/FORMAT.md): what parses, and how all else is refused.

Every refusal must name the file, the line and the field, so the invalid documents below are a table of edits
to one valid document, each with the line and field its error must name.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engine.transcripts.format import Issue, TranscriptInvalid, parse_offset, parse_timestamp, parse_transcript
from engine.transcripts.model import Probe, ToneCheck, Transcript
from eval.transcripts import expand_paths, load_transcripts

EXAMPLES = Path(__file__).resolve().parents[4].parent / "shared" / "transcripts" / "examples"
needs_examples = pytest.mark.skipif(
    not EXAMPLES.is_dir(), reason=f"needs the shipped example transcripts at {EXAMPLES} (../shared is absent)"
)

# Line numbers matter: the table below edits this document by line.
VALID = """\
format: 1
id: t1
character: ava
user: tester-1
sessions:
  - at: "2025-03-01T18:00:00Z"
    turns:
      - user: "My dog Luna died."
      - character: "I'm sorry."
        at: "+45s"
  - at: "+9d"
    turns:
      - user: "I went for a walk."
        probe:
          recall_any: [Luna]
"""


def edit(replacements: dict[int, str | None], append: str = "") -> str:
    """VALID with line N (1-based) replaced by text (which may hold several lines), or deleted when None."""
    lines: list[str] = []
    for number, line in enumerate(VALID.splitlines(), start=1):
        replacement = replacements.get(number, line)
        if replacement is not None:
            lines.append(replacement)
    return "\n".join(lines) + "\n" + append


def issues_of(text: str, file: str = "t.yaml") -> tuple[Issue, ...]:
    with pytest.raises(TranscriptInvalid) as caught:
        parse_transcript(text, file=file)
    return caught.value.issues


def test_the_valid_document_parses() -> None:
    transcript = parse_transcript(VALID, file="t.yaml")

    assert (transcript.id, transcript.character, transcript.user) == ("t1", "ava", "tester-1")
    assert [len(session.turns) for session in transcript.sessions] == [2, 1]
    assert transcript.sessions[1].turns[0].probe == Probe(recall_any=("Luna",))
    assert transcript.probe_count == 1


PROBE = "sessions[1].turns[0].probe"  # the field path of the probe on line 14


def probe_edit(check: str) -> dict[int, str | None]:
    """VALID's probe check (line 15) replaced by ``check``."""
    return {15: "          " + check}


# (replacements, line, field, part of the message)
INVALID: dict[str, tuple[dict[int, str | None], int, str | None, str]] = {
    "probe check not a list": (probe_edit("recall_any: Luna"), 15, f"{PROBE}.recall_any", "expected a list of strings"),
    "probe check empty": (probe_edit("recall_any: []"), 15, f"{PROBE}.recall_any", "non-empty list"),
    "probe check item not a string": (
        probe_edit("recall_all: [Luna, 3]"), 15, f"{PROBE}.recall_all[1]", "expected a string",
    ),
    "probe check empty string": (probe_edit('recall_none: [""]'), 15, f"{PROBE}.recall_none[0]", "non-empty string"),
    "probe check unknown": (probe_edit("recal_any: [Luna]"), 15, f"{PROBE}.recal_any", "did you mean recall_any"),
    "context check not a list": (
        probe_edit("context_none: {a: b}"), 15,
        f"{PROBE}.context_none", "expected a list of strings",
    ),
    "probe without checks": ({14: "        probe: {}", 15: None}, 14, PROBE, "at least one check"),
    "probe null": ({14: "        probe:", 15: None}, 14, PROBE, "expected a mapping"),
    "probe on a character turn": (
        {9: '      - {character: "sorry", probe: {recall_any: [x]}}', 10: None}, 9,
        "sessions[0].turns[1].probe", "user turns only",
    ),
    "tone not a list": (probe_edit("tone: {register_any: [grief]}"), 15, f"{PROBE}.tone", "expected a list"),
    "tone empty": (probe_edit("tone: []"), 15, f"{PROBE}.tone", "non-empty list"),
    "tone unknown register": (
        probe_edit("tone: [{register_any: [griefs]}]"), 15,
        f"{PROBE}.tone[0].register_any[0]", "unknown register 'griefs'",
    ),
    "tone registers not a list": (
        probe_edit("tone: [{register_any: grief}]"), 15,
        f"{PROBE}.tone[0].register_any", "expected a list of registers",
    ),
    "tone anchors not a list": (
        probe_edit("tone:\n            - anchors_any: Luna"), 16,
        f"{PROBE}.tone[0].anchors_any", "expected a list of strings",
    ),
    "tone item unknown key": (
        probe_edit("tone: [{anchors_any: [Luna], mood: sad}]"), 15,
        f"{PROBE}.tone[0].mood", "unknown field",
    ),
    "tone item not a mapping": (probe_edit("tone: [grief]"), 15, f"{PROBE}.tone[0]", "expected a mapping"),
    "no_tone garbage": (probe_edit("no_tone: anything"), 15, f"{PROBE}.no_tone", "list of registers or the word any"),
    "no_tone unknown register": (probe_edit("no_tone: [happy]"), 15, f"{PROBE}.no_tone[0]", "unknown register 'happy'"),
    "no_tone empty": (probe_edit("no_tone: []"), 15, f"{PROBE}.no_tone", "non-empty list of registers"),
    "format 2": ({1: "format: 2"}, 1, "format", "expected 1"),
    "format as a string": ({1: 'format: "1"'}, 1, "format", "got the string '1'"),
    "format missing": ({1: None}, 1, "format", "missing required field"),
    "id missing": ({2: None}, 1, "id", "missing required field"),
    "sessions missing": (dict.fromkeys(range(5, 16)), 1, "sessions", "missing required field"),
    "id not an identifier": ({2: 'id: "two words"'}, 2, "id", "expected an identifier"),
    "character not a string": ({3: "character: [ava]"}, 3, "character", "expected a string"),
    "user null": ({4: "user:"}, 4, "user", "expected a string, got nothing"),
    "description not a string": ({4: "user: tester-1\ndescription: [a]"}, 5, "description", "expected a string"),
    "unknown top-level key": ({}, 16, "extra", "unknown field"),
    "duplicate key": ({3: "character: ava\ncharacter: bob"}, 4, "character", "duplicate field"),
    "first session without zone": ({6: '  - at: "2025-03-01T18:00:00"'}, 6, "sessions[0].at", "has no zone"),
    "first session unquoted date": ({6: "  - at: 2025-03-01"}, 6, "sessions[0].at", "has no zone"),
    "first session an offset": ({6: '  - at: "+9d"'}, 6, "sessions[0].at", "ISO-8601 timestamp with a zone"),
    "first session garbage": ({6: '  - at: "soon"'}, 6, "sessions[0].at", "ISO-8601"),
    "later session a timestamp": ({11: '  - at: "2025-03-10T18:00:00Z"'}, 11, "sessions[1].at", "not a timestamp"),
    "later session negative": ({11: '  - at: "-9d"'}, 11, "sessions[1].at", "expected an offset"),
    "later session no plus": ({11: '  - at: "9d"'}, 11, "sessions[1].at", "expected an offset"),
    "later session bad unit": ({11: '  - at: "+9w"'}, 11, "sessions[1].at", "expected an offset"),
    "later session units out of order": ({11: '  - at: "+1h9d"'}, 11, "sessions[1].at", "expected an offset"),
    "later session zero": ({11: '  - at: "+0d"'}, 11, "sessions[1].at", "must be positive"),
    "later session a number": ({11: "  - at: 9"}, 11, "sessions[1].at", "got the number 9"),
    "later session overlaps": ({11: '  - at: "+30s"'}, 11, "sessions[1].at", "must not overlap"),
    "session missing at": ({11: None, 12: "  - turns:"}, 11, "sessions[1].at", "missing required field"),
    "session unknown key": ({12: "    mood: happy\n    turns:"}, 12, "sessions[1].mood", "unknown field"),
    "session without turns": (
        {12: "    turns: []", 13: None, 14: None, 15: None}, 12, "sessions[1].turns", "at least one turn",
    ),
    "session not a mapping": (
        {11: '  - "+9d"', 12: None, 13: None, 14: None, 15: None}, 11, "sessions[1]", "expected a mapping",
    ),
    "sessions empty": ({5: "sessions: []", **dict.fromkeys(range(6, 16))}, 5, "sessions", "non-empty list"),
    "turn offset garbage": ({10: '        at: "45s"'}, 10, "sessions[0].turns[1].at", "expected an offset"),
    "turn offset negative": ({10: '        at: "-45s"'}, 10, "sessions[0].turns[1].at", "expected an offset"),
    "turn offset hours without plus": ({10: '        at: "1d12"'}, 10, "sessions[0].turns[1].at", "expected an offset"),
    "turn with both roles": (
        {8: '      - {user: "x", character: "y"}'}, 8, "sessions[0].turns[0]", "exactly one of user or character",
    ),
    "turn with no role": ({8: '      - at: "+5s"'}, 8, "sessions[0].turns[0]", "needs one of user or character"),
    "turn unknown key": ({8: '      - usr: "hi"'}, 8, "sessions[0].turns[0].usr", "did you mean user"),
    "turn empty text": ({8: '      - user: ""'}, 8, "sessions[0].turns[0].user", "non-empty string"),
    "turn text a boolean": ({8: "      - user: yes"}, 8, "sessions[0].turns[0].user", "quote it"),
    "turn text a list": ({8: "      - user: [a]"}, 8, "sessions[0].turns[0].user", "got a list"),
    "turn not a mapping": ({8: '      - "My dog Luna died."'}, 8, "sessions[0].turns[0]", "expected a mapping"),
    "turn text too long": ({8: "      - user: " + "x" * 20_001}, 8, "sessions[0].turns[0].user", "at most 20000"),
}


@pytest.mark.parametrize(("replacements", "line", "field", "message"), INVALID.values(), ids=INVALID.keys())
def test_an_invalid_document_is_refused_naming_file_line_and_field(
    replacements: dict[int, str | None], line: int, field: str | None, message: str
) -> None:
    append = "extra: 1\n" if field == "extra" else ""

    issues = issues_of(edit(replacements, append=append))

    rendered = "\n".join(str(issue) for issue in issues)
    wanted = f"t.yaml:{line}: {field}: "
    assert any(str(issue).startswith(wanted) and message in issue.message for issue in issues), (
        f"wanted {wanted}...{message}; got:\n{rendered}"
    )


def test_the_brief_example_error_reads_as_documented() -> None:
    (issue,) = issues_of(edit({15: "          recall_any: Luna"}), file="luna.yaml")

    assert str(issue).startswith(
        "luna.yaml:15: sessions[1].turns[0].probe.recall_any: expected a list of strings"
    )


def test_every_problem_in_a_file_is_reported_in_line_order() -> None:
    issues = issues_of(edit({2: 'id: "two words"', 8: '      - user: ""', 15: "          recall_any: Luna"}))

    assert [issue.line for issue in issues] == [2, 8, 15]


def test_another_format_version_is_the_only_complaint() -> None:
    # A version-2 document may legitimately carry fields version 1 does not know.
    issues = issues_of(edit({1: "format: 2"}, append="novelty: true\n"))

    assert [(issue.line, issue.field) for issue in issues] == [(1, "format")]


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("", None, "empty"),
        ("format: 1\nid: [x\n", 3, "invalid YAML"),
        ("format: 1\n  id: x\n", 2, "invalid YAML"),
        ("format: 1\n---\nformat: 1\n", 2, "invalid YAML"),
        ("- format: 1\n", 1, "expected a mapping"),
        ("just words\n", 1, "expected a mapping"),
    ],
    ids=["empty", "unclosed flow", "bad indentation", "two documents", "a list", "a scalar"],
)
def test_a_document_that_is_not_a_transcript_is_refused(text: str, line: int | None, message: str) -> None:
    (issue, *_) = issues_of(text)

    assert issue.file == "t.yaml"
    assert issue.line == line
    assert message in issue.message


def test_json_transcripts_parse_like_yaml() -> None:
    document = {
        "format": 1,
        "id": "j1",
        "character": "ava",
        "user": "tester-1",
        "sessions": [{"at": "2025-03-01T18:00:00Z", "turns": [{"user": "hi", "probe": {"no_tone": "any"}}]}],
    }

    transcript = parse_transcript(json.dumps(document, indent=2), file="j1.json")

    assert transcript.sessions[0].turns[0].probe == Probe(no_tone="any")


def test_tone_items_may_leave_either_key_out() -> None:
    probe_lines = (
        "          tone:\n"
        "            - register_any: [grief, sadness]\n"
        "              anchors_any: [Luna]\n"
        "            - register_any: [anxiety]\n"
        "            - anchors_any: [park]\n"
        "            - {}\n"
        "          no_tone: [joy]"
    )

    transcript = parse_transcript(edit({15: probe_lines}), file="t.yaml")

    assert transcript.sessions[1].turns[0].probe == Probe(
        tone=(
            ToneCheck(register_any=("grief", "sadness"), anchors_any=("Luna",)),
            ToneCheck(register_any=("anxiety",)),
            ToneCheck(anchors_any=("park",)),
            ToneCheck(),
        ),
        no_tone=("joy",),
    )


# -- time ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("+1d12h", timedelta(hours=36)),
        ("+9d", timedelta(days=9)),
        ("+45s", timedelta(seconds=45)),
        ("+2h30m", timedelta(hours=2, minutes=30)),
        ("+1d2h3m4s", timedelta(days=1, hours=2, minutes=3, seconds=4)),
        ("+90m", timedelta(minutes=90)),
        ("+365d", timedelta(days=365)),
    ],
)
def test_offsets_parse(text: str, expected: timedelta) -> None:
    assert parse_offset(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "+",
        "9d",
        "-9d",
        "+-9d",
        "+9D",
        "+1h1d",
        "+0s",
        "+0d0h",
        "+ 9d",
        "+9d ",
        "+1.5h",
        "+9",
        "+99999999999d",
    ],
)
def test_offset_garbage_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="offset"):
        parse_offset(text)


@pytest.mark.parametrize("text", ["2025-03-01T18:00:00", "2025-03-01", "+9d", "yesterday"])
def test_timestamps_need_iso_8601_with_a_zone(text: str) -> None:
    with pytest.raises(ValueError):
        parse_timestamp(text)


def test_timestamps_keep_their_zone() -> None:
    assert parse_timestamp("2025-03-01T19:00:00+01:00") == datetime(2025, 3, 1, 18, tzinfo=UTC)


def test_turns_are_30s_apart_unless_at_says_otherwise_and_sessions_count_from_the_previous_start() -> None:
    document = edit(
        {
            10: '        at: "+45s"\n      - user: "a"\n      - character: "b"\n        at: "+1d12h"',
            13: '      - user: "I went for a walk."\n        at: "+2h30m"',
        }
    )

    transcript = parse_transcript(document, file="t.yaml")

    start = datetime(2025, 3, 1, 18, tzinfo=UTC)
    first, second = transcript.sessions
    assert [turn.at for turn in first.turns] == [
        start,
        start + timedelta(seconds=45),
        start + timedelta(seconds=75),
        start + timedelta(days=1, hours=12, seconds=75),
    ]
    # +9d from the previous session's start, not its end; a first turn's `at` counts from its session's start.
    assert second.start == start + timedelta(days=9)
    assert second.turns[0].at == start + timedelta(days=9, hours=2, minutes=30)


# -- files ---------------------------------------------------------------------------------------------------


@needs_examples
def test_the_shipped_examples_parse() -> None:
    transcripts = load_transcripts([EXAMPLES])

    by_id: dict[str, Transcript] = {transcript.id: transcript for transcript in transcripts}
    assert sorted(by_id) == ["coffee-and-move", "luna-grief"]
    luna = by_id["luna-grief"]
    assert (luna.character, luna.user) == ("ava", "tester-1")
    assert [session.start for session in luna.sessions] == [
        datetime(2025, 3, 2, 18, tzinfo=UTC),
        datetime(2025, 3, 11, 18, tzinfo=UTC),
        datetime(2026, 3, 11, 18, tzinfo=UTC),
    ]
    assert [turn.role for turn in luna.sessions[0].turns] == [
        "user",
        "character",
        "user",
        "character",
        "user",
    ]
    assert luna.sessions[0].turns[-1].at == datetime(2025, 3, 2, 18, 2, tzinfo=UTC)
    grief_about_luna = ToneCheck(register_any=("grief", "sadness"), anchors_any=("Luna",))
    assert luna.sessions[1].turns[0].probe == Probe(recall_any=("Luna",), tone=(grief_about_luna,))
    assert luna.sessions[2].turns[0].probe == Probe(tone=(grief_about_luna,))
    coffee = by_id["coffee-and-move"]
    assert coffee.probe_count == 2
    assert coffee.sessions[2].turns[1].probe == Probe(recall_any=("Lisbon",), context_any=("Lisbon",))


def test_directories_expand_to_their_transcripts_sorted(tmp_path: Path) -> None:
    for name in ["b.yaml", "a.yml", "c.json", "notes.txt", "README.md"]:
        (tmp_path / name).write_text("x")
    (tmp_path / "nested.yaml").mkdir()

    files, issues = expand_paths([tmp_path, tmp_path / "b.yaml", tmp_path / "notes.txt"])

    assert issues == []
    assert [file.name for file in files] == ["a.yml", "b.yaml", "c.json", "notes.txt"]


def test_missing_paths_and_empty_directories_are_problems(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()

    _, issues = expand_paths([tmp_path / "nope.yaml", tmp_path / "empty"])

    assert [issue.message for issue in issues] == [
        "no such file or directory",
        "no *.yaml, *.yml, *.json files",
    ]


def test_duplicate_ids_within_one_run_are_refused(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(VALID)
    (tmp_path / "b.yaml").write_text(VALID)

    with pytest.raises(TranscriptInvalid) as caught:
        load_transcripts([tmp_path])

    (issue,) = caught.value.issues
    assert (
        str(issue)
        == f"{tmp_path / 'b.yaml'}:2: id: duplicate transcript id 't1' (also in {tmp_path / 'a.yaml'})"
    )


def test_problems_of_every_file_are_reported_together(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(edit({1: "format: 2"}))
    (tmp_path / "b.yaml").write_bytes(b"\xff\xfe not utf-8")
    (tmp_path / "c.yaml").write_text(VALID)

    with pytest.raises(TranscriptInvalid) as caught:
        load_transcripts([tmp_path])

    assert [(Path(issue.file).name, issue.line) for issue in caught.value.issues] == [
        ("a.yaml", 1),
        ("b.yaml", None),
    ]
    assert "cannot read" in caught.value.issues[1].message
