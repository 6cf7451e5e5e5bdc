"""Label sets of RESCUE-Bench, with definitions in our own words, and a label normaliser with an audit trail.

Relation patterns and support strategies differ by scenario (couple or family). Utterance types are shared.
The label *keys* are the benchmark's; the definitions paraphrase the paper's Tables 7-10 and App. D.3.

>>> relation_labels("couple")[:3]
('pursue_withdraw', 'attack_attack', 'withdraw_withdraw')
>>> normalize_label("Pursue-Withdraw", relation_labels("couple")).label
'pursue_withdraw'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Scenario = Literal["couple", "family"]
SCENARIOS: tuple[Scenario, ...] = ("couple", "family")
GROUP_LABELS: dict[Scenario, str] = {"couple": "Couple", "family": "Family"}
THERAPIST = "Therapist"
NON_CLIENT_SPEAKERS = frozenset({"Therapist", "Couple", "Family"})


@dataclass(frozen=True, slots=True)
class Label:
    """One label of a closed set."""

    key: str
    name: str
    definition: str
    use_when: tuple[str, ...] = ()
    do_not_use_when: tuple[str, ...] = ()


_COUPLE_PATTERNS = (
    Label(
        "pursue_withdraw",
        "Pursue-withdraw",
        "One partner presses, criticises or pursues for contact while the other avoids, shuts down or "
        "minimises.",
        ("one partner keeps pushing the issue and the other deflects, goes quiet or changes the subject",),
        ("both partners escalate against each other (attack_attack)",),
    ),
    Label(
        "attack_attack",
        "Attack-attack",
        "Both partners blame, criticise, defend or counterattack, so the exchange escalates on both sides.",
        ("accusation is met with counter-accusation or heated defence",),
        ("only one partner is on the offensive while the other retreats (pursue_withdraw)",),
    ),
    Label(
        "withdraw_withdraw",
        "Withdraw-withdraw",
        "Both partners avoid emotional engagement; responses are flat, brief or absent on both sides.",
        ("neither partner engages with the other's feelings or the topic",),
        ("one partner is still pursuing (pursue_withdraw)",),
    ),
    Label(
        "repair_softening",
        "Repair / softening",
        "Defensiveness drops and vulnerability, apology, validation or reconnection begins to appear; "
        "still fragile.",
        ("a partner owns a part, apologises, or lets the other's hurt in",),
        (
            "a sustained shared stance is already in place (constructive_alignment)",
            "the conflict merely pauses",
        ),
    ),
    Label(
        "constructive_alignment",
        "Constructive alignment",
        "A stable shared understanding: the partners cooperate, agree on meaning or solve a problem "
        "together.",
        ("both partners build on each other's statements towards a joint view or plan",),
        ("softening is only beginning (repair_softening)", "a quiet moment with no joint stance"),
    ),
    Label(
        "mixed_transition",
        "Mixed / transition",
        "Two strong patterns are salient at once, or the interaction visibly pivots from one pattern to "
        "another.",
        ("the turn itself is the turning point between two clear patterns",),
        ("the pattern is merely unclear; this is not an uncertainty fallback",),
    ),
)

_FAMILY_PATTERNS = (
    Label(
        "escalation_conflict",
        "Escalation / conflict",
        "Two or more family members are in open, escalating conflict, blame or hostility.",
        ("members trade accusations or raise the stakes against each other",),
        ("one member pursues while another retreats (pursue_withdraw)",),
    ),
    Label(
        "pursue_withdraw",
        "Pursue-withdraw",
        "One family member presses or pursues while another avoids, disengages or shuts down.",
        ("a parent keeps pushing and a child goes silent or deflects, or the reverse",),
        ("broad multi-member escalation (escalation_conflict)",),
    ),
    Label(
        "mutual_disengagement",
        "Mutual disengagement",
        "Key members collectively withdraw, avoid the issue or participate very little.",
        ("the family goes quiet or sidesteps the topic together",),
        ("someone is still actively pursuing (pursue_withdraw)",),
    ),
    Label(
        "cross_generational_coalition",
        "Cross-generational coalition",
        "A specific alliance across generations forms around or against another member, e.g. a parent and "
        "child "
        "siding against the other parent.",
        ("a parent and a child take one side against another member", "a child is pulled into a triangle"),
        ("broad role confusion without one dominant alliance (boundary_hierarchy_strain)",),
    ),
    Label(
        "boundary_hierarchy_strain",
        "Boundary / hierarchy strain",
        "Boundaries are unclear or the hierarchy is unstable: role reversal, parentification, confused "
        "authority.",
        ("a child acts as the parent's confidant or carer", "nobody holds parental authority"),
        ("one clear cross-generation alliance is the main point (cross_generational_coalition)",),
    ),
    Label(
        "repair_softening",
        "Repair / softening",
        "Blame or rigidity eases; vulnerability, acknowledgement, apology or reconnection begins to appear.",
        ("a member acknowledges another's hurt or their own part",),
        ("a sustained coordinated family stance (cooperative_family_alliance)",),
    ),
    Label(
        "cooperative_family_alliance",
        "Cooperative family alliance",
        "Several members take a coordinated, constructive, shared stance towards the problem.",
        ("members agree on a shared view or plan and support each other",),
        ("softening is only beginning (repair_softening)", "a mere pause in conflict"),
    ),
    Label(
        "mixed_transition",
        "Mixed / transition",
        "Several dynamics are strongly salient at once, or the family visibly shifts from one pattern to "
        "another.",
        ("the turn is the pivot between two clear patterns",),
        ("the pattern is merely unclear; this is not an uncertainty fallback",),
    ),
)

_COUPLE_STRATEGIES = (
    Label(
        "counterbalance",
        "Counterbalance",
        "Restore balance by bringing a sidelined or less-heard partner back into the conversation.",
    ),
    Label(
        "safeguard",
        "Safeguard",
        "Protect a vulnerable partner from being overrun, shamed, cornered or flooded right now.",
    ),
    Label(
        "goal_align",
        "Goal alignment",
        "Turn the partners towards a shared task, purpose or therapeutic goal.",
    ),
    Label(
        "track",
        "Track",
        "Name or follow the live interaction sequence or negative cycle in the room; the broadest label, "
        "used "
        "only when nothing more specific fits.",
    ),
    Label(
        "reframe",
        "Reframe",
        "Move individual blame or a rigid story into a relational frame, a shared pattern or dilemma.",
    ),
    Label(
        "evoke",
        "Evoke",
        "Invite deeper, primary emotion (hurt, fear, longing, shame, need) beneath the surface reaction.",
    ),
    Label(
        "enact",
        "Enact",
        "Have one partner speak directly to the other in the room, rather than through the therapist.",
    ),
    Label(
        "join",
        "Join",
        "Foster softer, empathic contact so that one partner's emotion can be received by the other.",
    ),
    Label(
        "detach",
        "Unified detachment",
        "Help both partners step back and look at the problem together as a shared pattern, not as "
        "opponents.",
    ),
    Label(
        "repair", "Repair", "Soften a rupture: clarify intent, support apology, acknowledge hurt, reconnect."
    ),
)

_FAMILY_STRATEGIES = (
    Label(
        "safeguard",
        "Safeguard",
        "Protect a family member who is being overrun, shamed, threatened, scapegoated or overwhelmed.",
    ),
    Label(
        "join",
        "Join",
        "Build trust and the working alliance with the family so members stay engaged; lower defensiveness.",
    ),
    Label(
        "track",
        "Track",
        "Name or follow the live family sequence, escalation, coalition or recurring cycle; the broadest "
        "label.",
    ),
    Label(
        "counterbalance",
        "Counterbalance",
        "Rebalance voice and influence by bringing a less-heard or lower-power member back in.",
    ),
    Label(
        "enact",
        "Enact",
        "Move members into direct interaction in the room: one says, hears or answers another directly.",
    ),
    Label(
        "boundary",
        "Boundary",
        "Clarify or restructure boundaries, roles, hierarchy, coalitions or subsystems, often across "
        "generations.",
    ),
    Label(
        "reframe",
        "Reframe",
        "Shift the problem from individual blame to a systemic meaning or a shared family challenge.",
    ),
    Label(
        "repair",
        "Repair",
        "Support apology, acknowledgement of hurt and reconnection after a rupture or injury.",
    ),
)

UTTERANCE_TYPES: tuple[str, ...] = (
    "accusation",
    "defense",
    "disclosure",
    "request",
    "recollection",
    "reflection",
    "repair",
    "withdrawal",
    "validation",
    "other",
)

RELATION_PATTERNS: dict[Scenario, tuple[Label, ...]] = {
    "couple": _COUPLE_PATTERNS,
    "family": _FAMILY_PATTERNS,
}
STRATEGIES: dict[Scenario, tuple[Label, ...]] = {"couple": _COUPLE_STRATEGIES, "family": _FAMILY_STRATEGIES}


def relation_labels(scenario: Scenario) -> tuple[str, ...]:
    """Relation-pattern keys of a scenario, in the paper's table order."""
    return tuple(label.key for label in RELATION_PATTERNS[scenario])


def strategy_labels(scenario: Scenario) -> tuple[str, ...]:
    """Support-strategy keys of a scenario, in the reference taxonomy's order."""
    return tuple(label.key for label in STRATEGIES[scenario])


def group_label(scenario: Scenario) -> str:
    """``Couple`` or ``Family``: the label for a move addressed to the whole group."""
    return GROUP_LABELS[scenario]


# Spellings seen in model output and in older annotation files, mapped to the benchmark's keys.
ALIASES: dict[str, str] = {
    "pursuer_withdrawer": "pursue_withdraw",
    "pursue_withdrawal": "pursue_withdraw",
    "demand_withdraw": "pursue_withdraw",
    "attack_counterattack": "attack_attack",
    "mutual_attack": "attack_attack",
    "mutual_withdrawal": "withdraw_withdraw",
    "withdraw_withdrawal": "withdraw_withdraw",
    "repair": "repair",
    "softening": "repair_softening",
    "repair_and_softening": "repair_softening",
    "constructive": "constructive_alignment",
    "mixed": "mixed_transition",
    "transition": "mixed_transition",
    "conflict_escalation": "escalation_conflict",
    "escalation": "escalation_conflict",
    "disengagement": "mutual_disengagement",
    "coalition": "cross_generational_coalition",
    "cross_generation_coalition": "cross_generational_coalition",
    "boundary_strain": "boundary_hierarchy_strain",
    "hierarchy_strain": "boundary_hierarchy_strain",
    "family_alliance": "cooperative_family_alliance",
    "cooperative_alliance": "cooperative_family_alliance",
    "goal_alignment": "goal_align",
    "unified_detachment": "detach",
    "detachment": "detach",
    "tracking": "track",
    "reframing": "reframe",
    "evoking": "evoke",
    "enactment": "enact",
    "joining": "join",
    "boundary_making": "boundary",
    "boundaries": "boundary",
    "safeguarding": "safeguard",
    "counterbalancing": "counterbalance",
    "defence": "defense",
}

_SEPARATORS = re.compile(r"[\s\-/]+")


def canonical_form(text: str) -> str:
    """Lower case, separators (spaces, hyphens, slashes) to single underscores, surrounding junk removed.

    >>> canonical_form("  Repair - Softening ")
    'repair_softening'
    """
    cleaned = _SEPARATORS.sub("_", text.strip().strip("\"'`.,;:").lower())
    return re.sub(r"_+", "_", cleaned).strip("_")


@dataclass(frozen=True, slots=True)
class Normalized:
    """The result of normalising one label: the label (or ``None``) and how it was obtained."""

    raw: str
    label: str | None
    how: Literal["exact", "normalized", "alias", "invalid"]

    @property
    def remapped(self) -> bool:
        return self.how in ("normalized", "alias")


def normalize_label(raw: object, allowed: tuple[str, ...]) -> Normalized:
    """Map ``raw`` to one of ``allowed``; ``how`` records whether it was exact, re-cased, aliased or invalid.

    >>> normalize_label("track", ("track", "reframe"))
    Normalized(raw='track', label='track', how='exact')
    >>> normalize_label("Tracking", ("track", "reframe")).how
    'alias'
    >>> normalize_label("validation", ("track", "reframe")).label is None
    True
    """
    text = raw if isinstance(raw, str) else ("" if raw is None else str(raw))
    if text in allowed:
        return Normalized(text, text, "exact")
    form = canonical_form(text)
    if form in allowed:
        return Normalized(text, form, "normalized")
    alias = ALIASES.get(form)
    if alias is not None and alias in allowed:
        return Normalized(text, alias, "alias")
    return Normalized(text, None, "invalid")
