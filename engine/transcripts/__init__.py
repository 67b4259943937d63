"""Tester transcripts, format version 1, for the tuning page (``api.tuning``) and the evaluation runner (``eval``).

The contract is ../shared/transcripts/FORMAT.md. One module per concept:

- ``model``: the parsed transcript (sessions, turns, probes);
- ``format``: parsing and validating the YAML, every problem reported with its file, line and field;
- ``checks``: a probe's checks against what recall returned;
- ``replay``: replaying a transcript into an engine, checking each probe as it comes;
- ``compare``: replaying one transcript under two tuning profiles and pairing the probes up.

Nothing here reads files or directories: ``eval.transcripts`` finds and loads them, and runs the replays it reports
on; ``engine.replay_runner`` runs the tuning page's comparisons off the request threads.

Choices where FORMAT.md is silent:

- Sessions and turns are numbered from 0 everywhere (errors, report lines, JSON), like the field paths.
- A session's first turn happens at the session's start; an ``at`` on it is an offset from that start. Every
  later turn is ``at`` (default ``+30s``) after the turn before it.
- Offsets are positive: ``+`` then at least one of ``<n>d``, ``<n>h``, ``<n>m``, ``<n>s`` in that order.
- A session must start after the previous session's last turn, so time only moves forward.
- A tone item with neither key holds when any tone constraint is in force (the opposite of ``no_tone: any``).
- Check lists and their strings must be non-empty: an empty string would match everything.
"""
