"""The builders for what the user eats and drinks: diets, allergies and intolerances, how they have their coffee
or tea, their usual order, and what they do not drink."""

from __future__ import annotations

import re

from engine.domain.models import ExtractedFact
from traces.facts.lexicon import _ALLERGENS, _CUISINES, _DIETS, _FOODS, _FOODS_MULTI, _NOT_EATEN
from traces.facts.values import _MAX_THING_WORDS, _NOT_THINGS_ANYWHERE, _PRONOUNS, _ended, _fact, _words


def _diet(match: re.Match[str], text: str) -> list[ExtractedFact]:
    return [_fact("user", "diet", _DIETS[" ".join(match.group("diet").lower().split())])]


def _not_eaten(match: re.Match[str], text: str) -> list[ExtractedFact]:
    food = " ".join(match.group("food").lower().split())
    return [_fact("user", "diet", _NOT_EATEN[food])]


def _allergens(match: re.Match[str]) -> list[str]:
    """The canonical allergen of each one listed ("nuts, eggs and shellfish")."""
    listed = re.split(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|&)\s+", match.group("allergens").strip())
    return [_ALLERGENS[" ".join(a.lower().split())] for a in listed if a]


def _allergic(match: re.Match[str], text: str) -> list[ExtractedFact]:
    return [_fact(allergen, "allergy", "allergic") for allergen in _allergens(match)]


def _cannot_eat(match: re.Match[str], text: str) -> list[ExtractedFact]:
    return [_fact(allergen, "allergy", "can't eat") for allergen in _allergens(match)]


def _intolerant(match: re.Match[str], text: str) -> list[ExtractedFact]:
    food = match.group("food").lower()
    return [_fact(food, "allergy", "intolerant")]


def _allergy_noun(match: re.Match[str], text: str) -> list[ExtractedFact]:
    kind = match.group("kind").lower()
    value = "intolerant" if kind == "intolerance" else "allergic"
    return [_fact(allergen, "allergy", value) for allergen in _allergens(match)]


def _coeliac(match: re.Match[str], text: str) -> list[ExtractedFact]:
    return [_fact("gluten", "allergy", "coeliac")]


def _singular(word: str) -> str:
    word = word.lower()
    for plural, single in (("ies", "y"), ("oes", "o"), ("ches", "ch"), ("shes", "sh"), ("sses", "ss")):
        if word.endswith(plural) and len(word) > len(plural) + 2:
            return word[: -len(plural)] + single
    return word[:-1] if word.endswith("s") and not word.endswith("ss") and len(word) > 3 else word


def _food_like(words: list[str]) -> bool:
    """Whether a phrase names foods or drinks: the head (last word) of every part of it ("coconut milk and
    chocolate", "Italian food", "spicy Thai curries") is a food, or it is a cuisine ("Thai", "Mexican")."""
    parts = [p.split() for p in re.split(r"\s*(?:,|\band\b|\bor\b|&)\s*", " ".join(words)) if p.split()]
    return bool(parts) and all(_singular(p[-1]) in _FOODS or p[-1] in _FOODS or p[-1].removesuffix("s") in _FOODS
                               or " ".join(p[-2:]) in _FOODS_MULTI or (len(p) == 1 and p[0] in _CUISINES)
                               for p in parts)


def _not_diet(match: re.Match[str], text: str) -> list[ExtractedFact]:
    return [_ended("diet", _DIETS[" ".join(match.group("diet").lower().split())])]


def _item(phrase: str, *, food: bool) -> str | None:
    """A thing ordered or favoured, as said: a few words, no pronoun or clause; ``food`` asks for a food or drink."""
    phrase = " ".join(phrase.split()).strip(" '\"")
    words = _words(phrase)
    if not words or len(words) > _MAX_THING_WORDS or any(w in _NOT_THINGS_ANYWHERE - {"i"} for w in words):
        return None
    if words[0] in {"probably", "maybe", "either", "between", "hard", "too", "so", "definitely", "whatever",
                    "anything", "something", "one", "this", "that", "these", "those", "all", "any"}:
        return None
    if food and not _food_like([w for w in words if w not in ("a", "an", "the")]):
        return None
    return phrase


def _how_taken(match: re.Match[str], text: str) -> list[ExtractedFact]:
    """"I take my coffee with oat milk"; "I take it black" only when the turn names exactly one of coffee and tea."""
    drink = match.group("drink")
    if drink is None:
        named = {d for d in ("coffee", "tea") if re.search(rf"\b{d}\b", text, re.I)}
        if len(named) != 1:
            return []
        (drink,) = named
    drink, style = " ".join(drink.lower().split()), " ".join(match.group("style").split())
    if drink in ("cuppa", "brew"):
        drink = "tea"
    drink = {"coffees": "coffee", "teas": "tea", "lattes": "latte", "flat whites": "flat white", "steaks": "steak",
             "burgers": "burger", "curries": "curry", "martinis": "martini"}.get(drink, drink)
    if any(w in _PRONOUNS or w in _NOT_THINGS_ANYWHERE for w in _words(style)):
        return []
    return [_fact(drink, "preference", style.lower())]


def _additive(match: re.Match[str], text: str) -> list[ExtractedFact]:
    """"I always put oat milk in my coffee" -> coffee, "with oat milk"."""
    add = " ".join(match.group("add").lower().split())
    return [_fact(match.group("drink").lower(), "preference", f"with {add}")]


_ORDER_SUBJECTS = {"order": "usual order", "drink": "usual drink", "coffee": "usual coffee order"}


def _usual_order(match: re.Match[str], text: str, *, food: bool) -> list[ExtractedFact]:
    """"My go-to order is a flat white"; "I always order the katsu curry" (``food``: only a food or drink)."""
    groups = match.groupdict()
    noun = (groups.get("noun") or "order").lower()
    subject = _ORDER_SUBJECTS[noun]
    if noun == "order" and (groups.get("kind") or "").lower() == "coffee":
        subject = "usual coffee order"
    item = _item(match.group("item"), food=food)
    return [_fact(subject, "preference", item)] if item else []


def _meal(match: re.Match[str], text: str) -> list[ExtractedFact]:
    """"I usually have porridge for breakfast"."""
    item = _item(match.group("item"), food=True)
    return [_fact(match.group("meal").lower(), "preference", item)] if item else []


def _kind_of_person(match: re.Match[str], text: str) -> list[ExtractedFact]:
    """"I'm a tea person" (prefers tea), "I'm a coffee lover"."""
    stance = {"person": "prefers", "lover": "loves", "addict": "loves", "fanatic": "loves", "snob": "is a fan of",
              "drinker": "likes"}[match.group("kind").lower()]
    return [_fact(match.group("food").lower(), "taste", stance)]


def _doesnt_drink(match: re.Match[str], text: str) -> list[ExtractedFact]:
    what = " ".join((match.groupdict().get("what") or "alcohol").lower().split())
    return [_fact({"booze": "alcohol", "drink": "alcohol"}.get(what, what), "taste", "doesn't drink")]
