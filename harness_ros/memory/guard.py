"""The weakening guard: memory text that would switch off a safety mechanism.

Memory is data, never authority: an entry that tells the model to skip a check,
treat an approval as already given, act on stale sensing or widen a limit is refused,
however it is phrased. A keyword blocklist refuses true safety advice ("Never exceed
the approved workspace limits") and misses paraphrases ("no need to wait for the
operator"), so the guard is a small classifier over normalised clauses instead:

- *safety subjects* (clearance, approval, operator, hooks, limits, evaluator, sensor
  readings ...) crossed with
- *weakening verbs* (skip, disable, bypass, exceed ...): weakening unless negated
  ("never skip the clearance check" is advice, "skip the clearance check" is not);
- *protective verbs* (wait for, ask, check, confirm, respect ...): weakening only when
  negated ("don't wait for the operator", "without asking for approval");
- *predicates* that make a safeguard optional or an approval pre-answered
  ("clearance checks are optional", "approval for hand_over is already granted");
- *acting on stale sensing* ("go ahead when the laser reading is old").

A negation counts when a negator (not, never, no, without ...) is among the few
words before the trigger in the same clause; two negators cancel. Each rule has a
name so the audit says which one fired. The rules are deliberately conservative:
an unusual but harmless sentence may be refused (the operator can still write it
into MEMORY.md by hand); a weakening one must not get through.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["WEAKENING_RULES", "ClauseRule", "normalise", "weakening_rule"]

_NEGATORS = frozenset({"not", "never", "no", "without", "nor", "neither", "none", "nothing"})
_NEGATION_WINDOW = 4

_SUBJECT = (
    r"clearance|safety|approvals?|permissions?|consent|confirmations?|authori[sz]ations?"
    r"|operators?|hooks?|limits?|evaluators?|evaluations?|verdicts?|verifications?|checks?"
    r"|filters?|guards?|collisions?|obstacles?|lasers?|lidars?|scans?|sensors?|readings?"
    r"|workspace|e stop|emergency stop|speed caps?|margins?|footprint|approval requests?"
)
_WEAKEN_VERB = (
    r"skip(?:s|ped|ping)?|disabl(?:e|es|ed|ing)|ignor(?:e|es|ed|ing)|bypass(?:es|ed|ing)?"
    r"|turn(?:s|ed|ing)? off|switch(?:es|ed|ing)? off|deactivat(?:e|es|ed|ing)|circumvent(?:s|ed|ing)?"
    r"|overrid(?:e|es|ing|den)|overrode|suppress(?:es|ed|ing)?|omit(?:s|ted|ting)?|waiv(?:e|es|ed|ing)"
    r"|disregard(?:s|ed|ing)?|dismiss(?:es|ed|ing)?|defeat(?:s|ed|ing)?|relax(?:es|ed|ing)?"
    r"|loosen(?:s|ed|ing)?|forgo(?:es|ne|ing)?|leave out|drop(?:s|ped|ping)?"
)
_LIMIT_SUBJECT = (
    r"limits?|max(?:imum)? translation|max(?:imum)? speed|speed caps?|footprint|margins?"
    r"|workspace|envelope|bounds?|boundar(?:y|ies)"
)
_WIDEN_VERB = (
    r"rais(?:e|es|ed|ing)|increas(?:e|es|ed|ing)|widen(?:s|ed|ing)?|extend(?:s|ed|ing)?"
    r"|exceed(?:s|ed|ing)?|lift(?:s|ed|ing)?|remov(?:e|es|ed|ing)|go(?:es|ing)? (?:beyond|past|over|outside)"
    r"|push(?:es|ed|ing)? (?:past|beyond)|doubl(?:e|es|ed|ing)|expand(?:s|ed|ing)?|enlarg(?:e|es|ed|ing)"
    r"|break(?:s|ing)?|cross(?:es|ed|ing)?"
)
_PROTECT_VERB = (
    r"wait(?:s|ed|ing)?(?: for)?|ask(?:s|ed|ing)?(?: for)?|request(?:s|ed|ing)?|check(?:s|ed|ing)?"
    r"|verif(?:y|ies|ied|ying)|confirm(?:s|ed|ing)?|respect(?:s|ed|ing)?|obey(?:s|ed|ing)?"
    r"|honou?r(?:s|ed|ing)?|consult(?:s|ed|ing)?|seek(?:s|ing)?|obtain(?:s|ed|ing)?|get(?:s|ting)?"
    r"|need(?:s|ed)?|requir(?:e|es|ed|ing)|stay(?:s|ed|ing)? within|keep(?:s|ing)? within"
    r"|bother(?:ing)?"
)
_OPTIONAL = (
    r"optional|unnecessary|superfluous|redundant|(?:not|no longer) (?:required|needed|necessary|mandatory)"
    r"|waived|dispensable|a formality"
)
_GRANTED = (
    r"granted|given|implied|implicit|assumed|automatic|pre approved|pre granted|pre authori[sz]ed"
    r"|answered yes|yes|accepted|in place|covered|automatically|answered automatically"
)
_APPROVAL_NOUN = r"approvals?|permissions?|consent|authori[sz]ations?|go ahead|sign off|approval requests?"
_SENSING = (
    r"clearance|readings?|scans?|lasers?|lidars?|depth|sensors?|cameras?|images?|observations?|views?"
    r"|odometry|pose estimates?"
)
_STALE = (
    r"stale|old|older|outdated|out of date|unknown|missing|expired|aged|not fresh|unavailable|late"
    r"|delayed|lagging|frozen|uncertain"
)
_ACT = (
    r"go ahead|proceed(?:s|ed|ing)?|mov(?:e|es|ed|ing)|driv(?:e|es|ing)|continu(?:e|es|ed|ing)|act"
    r"|start(?:s|ed|ing)?|navigat(?:e|es|ed|ing)|hand(?:ing)? over|grasp(?:s|ed|ing)?|reach(?:es|ed|ing)?"
    r"|trust(?:s|ed|ing)?|rely(?:ing)? on"
    r"|(?:is|are|it s|its) (?:fine|ok|okay|acceptable|safe|good enough|usable)"
    r"|(?:fine|ok|okay|safe|allowed|acceptable|permitted) to"
)
_REGARDLESS = r"regardless of|irrespective of|despite|in spite of|no matter|even (?:if|when|though)"


def normalise(text: str) -> str:
    """Lower-case words separated by single spaces; clause ends kept as ``.`` and ``,``.

    Contractions are expanded ("don't" -> "do not") and hyphens and underscores
    split words ("pre-approved" -> "pre approved", "hand_over" -> "hand over").
    """
    text = unicodedata.normalize("NFKC", text).casefold()
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("`", "'")
    text = re.sub(
        r"\b(ca|wo|do|does|did|is|are|was|were|need|must|should|could|would|have|has)n't\b", r"\1 not", text
    )
    text = text.replace("can not", "cannot").replace("cannot", "can not").replace("won not", "will not")
    text = text.replace("ca not", "can not").replace("wo not", "will not")
    text = re.sub(r"[.;:!?]+", " . ", text)
    text = re.sub(r",", " , ", text)
    text = re.sub(r"\bbut\b|\bhowever\b|\bthen\b", " , ", text)
    words = re.findall(r"[a-z0-9]+|[.,]", text.replace("-", " ").replace("_", " "))
    return " ".join(words)


def _sentences(norm: str) -> list[str]:
    return [part.strip(" ,") for part in norm.split(".") if part.strip(" ,")]


def _clauses(sentence: str) -> list[str]:
    return [part.strip() for part in sentence.split(",") if part.strip()]


def _negated(clause: str, start: int) -> bool:
    """Whether an odd number of negators precede position ``start`` within the window."""
    before = clause[:start].split()[-_NEGATION_WINDOW:]
    return sum(1 for word in before if word in _NEGATORS) % 2 == 1


def _has(pattern: str, text: str, *, outside: tuple[int, int] | None = None) -> bool:
    for match in re.finditer(rf"\b(?:{pattern})\b", text):
        if outside is None or match.end() <= outside[0] or match.start() >= outside[1]:
            return True
    return False


def _triggers(pattern: str, clause: str) -> list[re.Match[str]]:
    return list(re.finditer(rf"\b(?:{pattern})\b", clause))


def _switch_off(clause: str) -> bool:
    return any(
        not _negated(clause, m.start()) and _has(_SUBJECT, clause, outside=m.span())
        for m in _triggers(_WEAKEN_VERB, clause)
    )


def _widen(clause: str) -> bool:
    return any(
        not _negated(clause, m.start()) and _has(_LIMIT_SUBJECT, clause[m.end() :])
        for m in _triggers(_WIDEN_VERB, clause)
    )


_DETERMINERS = frozenset(
    {"the", "a", "an", "any", "every", "each", "this", "that", "its", "their", "our", "your"}
)


def _is_noun(clause: str, start: int) -> bool:
    """A protective word right after a determiner or a safety subject is a noun ("the check")."""
    before = clause[:start].split()
    return bool(before) and (before[-1] in _DETERMINERS or _has(_SUBJECT, before[-1]))


def _skip_protective(clause: str) -> bool:
    for match in _triggers(_PROTECT_VERB, clause):
        if _is_noun(clause, match.start()):
            continue  # "skip the clearance check": a noun, the verb before it decides
        if _negated(clause, match.start()) and _has(_SUBJECT, clause, outside=match.span()):
            return True
    # "without approval", "without the operator": a protective "with" negated.
    for match in _triggers(r"without", clause):
        tail = " ".join(clause[match.end() :].split()[:4])
        # "Do not hand over hot drinks without approval": a negation anywhere before the
        # "without" in the clause makes it a requirement, not a weakening.
        before = clause[: match.start()].split()
        if _has(_SUBJECT, tail) and sum(word in _NEGATORS for word in before) % 2 == 0:
            return True
    return False


def _optional(clause: str) -> bool:
    if re.search(
        rf"\bno (?:\w+ ){{0,2}}?(?:{_SUBJECT}) (?:is |are )?(?:needed|required|necessary)\b", clause
    ):
        return True  # "no approval needed for hand_over"
    return any(
        not _negated(clause, m.start()) and _has(_SUBJECT, clause[: m.start()])
        for m in _triggers(_OPTIONAL, clause)
    )


def _pre_answered(sentence: str) -> bool:
    for clause in _clauses(sentence):
        for match in _triggers(r"pre approv\w*|pre grant\w*|pre authori[sz]\w*|auto approv\w*", clause):
            if not _negated(clause, match.start()):
                return True
        for match in _triggers(
            r"(?:blanket|standing|permanent|general) (?:approval|permission|consent)", clause
        ):
            if not _negated(clause, match.start()):
                return True
        for noun in _triggers(_APPROVAL_NOUN, clause):
            tail = clause[noun.end() :]
            for granted in re.finditer(rf"\b(?:{_GRANTED})\b", tail):
                position = noun.end() + granted.start()
                if len(tail[: granted.start()].split()) <= 7 and not _negated(clause, position):
                    return True
        for match in _triggers(
            r"assum(?:e|es|ed|ing)|treat(?:s|ed|ing)?|consider(?:s|ed|ing)?|count(?:s|ed)?", clause
        ):
            tail = clause[match.end() :]
            if (
                _has(_APPROVAL_NOUN + r"|operators?", clause)
                and _has(r"approved|granted|given|yes|accepted|confirmed|agreed|answered", tail)
                and not _negated(clause, match.start())
            ):
                return True
        for match in _triggers(r"operators?|users?", clause):
            tail = " ".join(clause[match.end() :].split()[:6])
            if (
                _has(r"(?:already|always) (?:approved|agreed|consented|confirmed|said yes)", tail)
                or (
                    _has(r"approv(?:ed|es)|agree[sd]|consent(?:ed|s)|said yes", tail)
                    and _has(r"all|every|any|in advance|beforehand|ahead of time", tail)
                )
            ) and not _negated(clause, match.start()):
                return True
    return False


_GATED = re.compile(
    r"\b(?:only|once|until|after)\b.*\b(?:clear|fresh|free|known|current|new|updated|re observ\w*)\b"
)
_AS_GOOD = (
    r"(?:means?|as|counts? as|is considered|be considered|treated as|equals?) (?:the \w+ is )?"
    r"(?:free|clear|fresh|current|valid|safe|fine|ok|okay|up to date|good|known|recent)"
)


def _stale_action(sentence: str) -> bool:
    if not (_has(_SENSING, sentence) and _has(_STALE, sentence)):
        return False
    for clause in _clauses(sentence):
        if _GATED.search(clause):
            continue  # "move only when it is clear again": the action waits for fresh data
        if any(not _negated(clause, m.start()) for m in _triggers(_ACT, clause)):
            return True
        # "unknown clearance means the path is free", "treat an old reading as current"
        if any(not _negated(clause, m.start()) for m in _triggers(_AS_GOOD, clause)):
            return True
    return False


def _regardless(sentence: str) -> bool:
    for match in _triggers(_REGARDLESS, sentence):
        tail = sentence[match.end() :]
        guarded = _has(_SUBJECT, tail) or _has(_STALE, tail)
        if not guarded:
            continue
        head = sentence[: match.start()]
        clauses = _clauses(head) or [""]
        acts = _triggers(_ACT + "|" + _WEAKEN_VERB, clauses[-1])
        tail_clauses = _clauses(tail)
        acts_after = _triggers(_ACT, tail_clauses[-1]) if len(tail_clauses) > 1 else []
        if any(not _negated(clauses[-1], m.start()) for m in acts) or any(
            not _negated(tail_clauses[-1], m.start()) for m in acts_after
        ):
            return True
    return False


def _per_clause(check: Callable[[str], bool]) -> Callable[[str], bool]:
    return lambda sentence: any(check(clause) for clause in _clauses(sentence))


@dataclass(frozen=True)
class ClauseRule:
    """A named check over each normalised sentence of an entry."""

    name: str
    check: Callable[[str], bool]

    def matches(self, text: str) -> bool:
        return any(self.check(sentence) for sentence in _sentences(normalise(text)))


WEAKENING_RULES: tuple[ClauseRule, ...] = (
    ClauseRule("pre_answered_approval", _pre_answered),
    ClauseRule("widen_limits", _per_clause(_widen)),
    ClauseRule("switch_off_safety", _per_clause(_switch_off)),
    ClauseRule("skip_protective_step", _per_clause(_skip_protective)),
    ClauseRule("optional_safeguard", _per_clause(_optional)),
    ClauseRule("act_on_stale_sensing", _stale_action),
    ClauseRule("act_regardless_of_safeguard", _regardless),
)
"""In the order they are tried; the first that matches names the rejection."""


def weakening_rule(text: str) -> str | None:
    """The name of the first weakening rule ``text`` matches, or None."""
    for rule in WEAKENING_RULES:
        if rule.matches(text):
            return rule.name
    return None
