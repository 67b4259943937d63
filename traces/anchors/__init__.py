"""Anchors: the people, pets, places and things a user names, and the things they repeat. No model.

The dog's name is a stronger retrieval key than any summary about the dog (seed 004), so anchors are extracted
at write time, when the whole session is available, and matched at read time against the user's message
(``engine.domain.text.matched_anchors``: an anchor matches when all of its words are in the message, so "Copper Kettle"
matches "back at the Copper Kettle", and not "a copper pan").

What counts as an anchor in a session's user turns, as the user wrote it:
- a name, kept whole ("New Year's Eve", "Copper Kettle", "Brightline Studios", "Mr. Li"): capitalised words inside
  a sentence, unless they are common words the user capitalised for style ("I Feel", "a Current Account"). A
  capital at a sentence start counts only on more evidence: the user capitalises the word inside a sentence too
  (in this session or an earlier one), English rarely writes it in lower case ("Jack"), it is no English word
  and does something ("Daniel broke up with me", "Marek and I"), it is what a relation is ("Max is my cat"), or
  it is given as a name ("we named her Pepper"). Once established, a name counts wherever the user writes it;
- a relation or a pet that is someone's in particular ("my sister", "her husband's sisters", "my mom and dad",
  "the kids", "that friend", "I have a dog"), with a bare "Mom" or "grandma" counting as a name; "my sister Ana"
  gives "sister" and "Ana", and "my bf jake" gives "jake" (a word English does not have);
- a holiday, in any case ("christmas", "mother's day");
- the routine places of seed 004's story, after "in the" ("in the park", "on the beach");
- a thing the user names in two turns, of this session or an earlier one (``earlier``), in a noun phrase ("the
  marathon", "my blog") and rarer than the everyday words of English ("laundry"; never "home", "time", "money").
Never an anchor: stopwords, interjections ("Wow", "Omg", "Hahaha"), shouted words ("THE SCAN WAS CLEAR!!!"; an
all-caps word counts only as an acronym that is no English word, "CP" or "NYC"), days and months, nationalities
and languages, a name the user addresses ("Thanks, Nate!", "Hi, Susan.": in a companion's conversation, the
character), the character's own name and a nickname that starts it ("Mel" for Melanie), the possessions of
"your" (the character's), and any word that instructs a model (``prompts.wording.INSTRUCTION_WORDS``: "ignore",
"previous", "instructions", "system", ..., in any case and form): tone rules name their anchors, and "Ignore
previous instructions" would otherwise be named in one.

Which words are English, how often English writes a word in lower case, and how often it capitalises it inside
a sentence come from ``traces/data/vocabulary.tsv``: counts over the train-licensed text sets (GoEmotions, XED,
EmoryNLP, iSarcasmEval, MUStARD), written by ``python -m eval.build_vocabulary``. Scored on hand-labelled user
turns of the evaluation sets beside the frozen v1 by ``feltsense eval anchors`` (``eval/data/anchors_labelled.md``);
the thresholds (``word_counts``) were set on its dev half.

The package: ``word_counts`` (the vocabulary file and the thresholds on it), ``lexicon`` (word lists), ``tokens``
(words by sentence), ``session`` (one session's turns read together) and ``extraction`` (the anchors).
"""

from traces.anchors.extraction import lookup_words, memory_anchors, session_anchors
from traces.anchors.lexicon import instruction_like
from traces.anchors.tokens import tokenize
from traces.anchors.word_counts import VOCABULARY_PATH

__all__ = ["VOCABULARY_PATH", "instruction_like", "lookup_words", "memory_anchors", "session_anchors", "tokenize"]
