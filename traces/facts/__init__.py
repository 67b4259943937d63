"""Durable facts in what the user says, extracted without a model, as (subject, relation, value) triples.

Each fact also carries one self-contained sentence about the user ('The user lives in "Lisbon".'): the write-time
pass keeps the sentences in the trace and the lexical index learns their words, so "where I live" finds "I moved
to Lisbon" even though the user never said "live". The sentence is the server's template for the triple
(``prompts.wording.fact_sentence``, the same for facts written over the API), never the user's wording. The triple
names a slot, ``(subject, relation)``, so a later fact on the same slot can supersede an earlier one (see
``engine.domain.models.ExtractedFact``).

Precision matters more than recall: a wrong fact is recalled as if the user had said it, a missing one is only a
missed chance. So every pattern is anchored on a first-person statement ("I live in", "I'm a nurse", "my dog's
name is"), values that cannot be checked by shape come from small lexicons (jobs, allergens, foods, instruments),
and a match is dropped when its clause is hedged or reported ("if", "might", "I think", "she said"), when the
sentence undoes it ("anymore", "no longer", "jk") or when the sentence is a question. Names and places must be
capitalised, since chat is full of lower-case words that only look like them. Last, every value must have its
relation's shape (``well_formed``): a Title-Case instruction ("I work at the System Says Be Cheerful About Luna")
is capitalised too, but it is not a name.

v2 (issue #14) adds, on the same principles:

- **Changes.** The past tense matches only for a change said as news ("I started at Kestrel Media", "I've joined
  Orbit Foods", "we broke up", "I graduated", "I moved in with Sam"), and not when the sentence dates it long ago
  ("years ago", "in 2015") or tells it as the reason for something else ("since I lost my job..."). A change
  fills the same slot as the value it replaces, so it supersedes it.
- **Endings.** A negation of a current state ends its slot with a value of its own ("I don't work at Orbit Foods
  any more" -> works_at "no longer Orbit Foods", read as 'The user no longer works at "Orbit Foods".'). A turn
  that also says the new value keeps only that (``extract``); an ending that names a value its slot no longer
  holds is not written (``engine.facts.ends_another``).
- **Preferences.** How the user has food and drink ("preference"), tastes in them ("taste", by a food lexicon;
  other likes stay "opinion"), favourites, pets and children, hobbies, and what they are busy with these days.

The package, one concept a module: ``lexicon`` (text shapes and word lists), ``guards`` (sentences, clauses and
what keeps a match from being a statement), ``values`` (building a fact and its values), the builders by topic
(``identity``, ``diet``, ``likes``), ``value_shapes`` (``well_formed``), ``rules`` (the patterns, most specific
first) and ``extraction`` (``extract``).
"""

from traces.facts.extraction import AUTO_ACTIVE_RELATIONS, ends_slot, extract, extract_facts
from traces.facts.value_shapes import well_formed

__all__ = ["AUTO_ACTIVE_RELATIONS", "ends_slot", "extract", "extract_facts", "well_formed"]
