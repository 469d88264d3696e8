"""Reading a request's words the way the offline demo's scripted router and planner do
(core/process/demo_shapes.py): the arithmetic or the city in a question; the items a task
names ("compare Postgres, MySQL and SQLite", "three databases"), its subject and topic,
what it asks to have written. Plain patterns: deterministic, no model.
"""

from __future__ import annotations

import re

PLAN_WORDS = re.compile(
    r"\b(compare|comparison|research|investigate|write|draft|report|summari[sz]e|plan|"
    r"organi[sz]e|build|design|analy[sz]e|evaluate|review|prepare|create|recommend|"
    r"budget|cost|estimate|pros|cons|options|alternatives|vs\.?|versus)\b",
    re.IGNORECASE,
)
_ARITHMETIC = re.compile(r"\(?-?\d[\d.,]*\)?(?:\s*[-+*/×x÷^]\s*\(?-?\d[\d.,]*\)?)+")
TIME = re.compile(r"\bwhat time\b|\btime (?:is it )?in\b|\bclock\b", re.IGNORECASE)
ZONES = {  # the clocks the demo reads, by city
    "tokyo": "Asia/Tokyo",
    "london": "Europe/London",
    "paris": "Europe/Paris",
    "berlin": "Europe/Berlin",
    "lisbon": "Europe/Lisbon",
    "new york": "America/New_York",
    "san francisco": "America/Los_Angeles",
    "los angeles": "America/Los_Angeles",
    "sydney": "Australia/Sydney",
    "singapore": "Asia/Singapore",
    "delhi": "Asia/Kolkata",
}
_NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "2": 2, "3": 3, "4": 4, "5": 5}
_COUNTED = re.compile(r"\b(two|three|four|five|[2-5])\s+([a-z][a-z-]+)", re.IGNORECASE)
_LIST_START = re.compile(r"\b(?:compare|between|of|to|choose|pick)\s+|:\s*", re.IGNORECASE)
_LIST_END = re.compile(r"[.?!;]|\s+(?:for|on|in terms of|by|with|and then)\s+")
_SPLIT = re.compile(r",\s*(?:and\s+|or\s+)?|\s+(?:and|or|vs\.?|versus)\s+", re.IGNORECASE)
FIGURES = re.compile(
    r"\b(cost|costs|price|prices|budget|how much|estimate|figures|numbers|statistics|data)\b",
    re.IGNORECASE,
)
WRITING = re.compile(
    r"\b(write|draft|report|summary|summari[sz]e|post|email|article|memo|plan|recommend|"
    r"recommendation|compare|comparison|table|document|proposal|brief)\b",
    re.IGNORECASE,
)
_STOP = frozenset(
    "a an the and or of for to in on at by with our my your their is are be this that these "
    "those what which who how please me us we i it its from into about between three two four "
    "five some any all each".split()
)
_VERBS = frozenset(m.lower() for m in PLAN_WORDS.pattern.split("|") if m.isalpha())


def expression_in(task: str) -> str | None:
    """The arithmetic in ``task`` as ``calculate`` takes it ("2+2", "3 × 4" → "3 * 4")."""
    found = _ARITHMETIC.search(task)
    if found is None:
        return None
    text = found.group(0).replace(",", "")
    return re.sub(r"\s*[×x]\s*", " * ", text).replace("÷", "/").replace("^", "**").strip()


def zone_in(task: str) -> str:
    lowered = task.lower()
    return next((zone for city, zone in ZONES.items() if city in lowered), "UTC")


def _title(text: str) -> str:
    text = re.sub(r"[^\w\s+#.-]", "", text).strip(" .")
    return " ".join(w if w[:1].isupper() else w.capitalize() for w in text.split()[:3])


def _singular(noun: str) -> str:
    noun = noun.lower()
    if noun.endswith("ies"):
        return noun[:-3] + "y"
    if noun.endswith(("sses", "xes", "ches", "shes")):
        return noun[:-2]
    return noun[:-1] if noun.endswith("s") else noun


def _is_item(part: str) -> bool:
    """A thing named in a list ("Postgres", "New York"), not a clause ("write a plan")."""
    words = part.lower().split()
    return len(words) <= 3 and words[0] not in _VERBS and not {"a", "an", "the"} & set(words)


def items_in(task: str) -> list[str]:
    """The things the task names to look at, in its order (at most five): a list after
    "compare", "between", "of" or a colon; else "three databases" → Database A, B, C."""
    for start in _LIST_START.finditer(task):
        rest = re.split(
            r"[.?!;]|\s+(?:for|on|in terms of|by|with|and then)\s+", task[start.end() :]
        )
        parts = [p.strip() for p in _SPLIT.split(rest[0]) if p.strip()]
        parts = [re.sub(r"^(?:the|a|an)\s+", "", p, flags=re.IGNORECASE) for p in parts]
        if len(parts) >= 2 and all(_is_item(p) for p in parts):
            return [_title(p) for p in parts[:5]]
    counted = _COUNTED.search(task)
    if counted:
        noun = _singular(counted.group(2)).capitalize()
        return [f"{noun} {'ABCDE'[i]}" for i in range(_NUMBERS[counted.group(1).lower()])]
    return []


def _about(task: str) -> str:
    """What the task is about: the words after "about", "on", "of" or "for", else all."""
    about = re.search(r"\b(?:about|on|of|for)\s+(.+)", task, re.IGNORECASE)
    return about.group(1) if about else task


def subject_of(task: str) -> str:
    """The task's subject as a phrase, for briefs ("the cost of a bakery in Porto and write
    a plan" → "bakery in Porto")."""
    phrase = re.split(r"\s+and\s+|[,.;:?!]", _about(task))[0].strip()
    phrase = re.sub(r"^(?:the|a|an)\s+", "", phrase, flags=re.IGNORECASE)
    return " ".join(phrase.split()[:6]) or "the task"


def topic_of(task: str) -> str:
    """A few key words of the task ("Research the history of bicycles" → "Bicycles")."""
    phrase = _about(task)
    words = [w for w in re.findall(r"[A-Za-z][\w+#-]*", phrase) if w.lower() not in _STOP]
    keys = [w for w in words if w.lower() not in _VERBS] or words or ["Task"]
    return _title(" ".join(keys[:2]))


_DELIVERABLES = (
    (re.compile(r"\b(compare|comparison|vs\.?|versus|pros)\b", re.IGNORECASE), "comparison"),
    (re.compile(r"\b(blog|post|article)\b", re.IGNORECASE), "post"),
    (re.compile(r"\b(email|memo|letter)\b", re.IGNORECASE), "message"),
    (re.compile(r"\b(plan|itinerary|schedule)\b", re.IGNORECASE), "plan"),
    (re.compile(r"\b(summary|summari[sz]e)\b", re.IGNORECASE), "summary"),
)


def deliverable_of(task: str, *, compared: bool = False) -> str:
    """What the writing team writes: a comparison, a post, a plan… (a report otherwise)."""
    found = next((kind for pattern, kind in _DELIVERABLES if pattern.search(task)), None)
    return found or ("comparison" if compared else "report")
