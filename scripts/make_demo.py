"""Write the project's own demo dataset: six fictional, fully annotated therapy conversations.

Every name, situation and line below was written for this project; nothing comes from the real RESCUE-Bench
data. The conversations are authored as compact turns (``C`` = a client speaks, ``T`` = the therapist speaks)
and phase markers (``P`` = the relation pattern that holds from here on). :func:`build` expands them into
release-format rows with timing, row indices and evidence rows; :func:`main` writes the package data file::

    .venv/bin/python scripts/make_demo.py          # rewrites src/rescue_bench/data/demo/demo.jsonl

The output is deterministic: running the script twice gives the same bytes (a test checks this).

A cue string holds a turn's visual cues as ``key=description`` items separated by ``"; "``. Keys: ``b`` body
posture, ``f`` facial expression, ``s`` self-directed behaviour, ``i`` interaction behaviour. A key may name
the person (``f@Tom=...``) and, for ``i``, the targets (``i>Tom=...``, ``i@Tom>Nadia=...``); by default the
person is the speaker and the interaction targets are the turn's addressees.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rescue_bench.taxonomy import (
    GROUP_LABELS,
    THERAPIST,
    UTTERANCE_TYPES,
    Scenario,
    relation_labels,
    strategy_labels,
)

OUT = Path(__file__).resolve().parents[1] / "src" / "rescue_bench" / "data" / "demo" / "demo.jsonl"
GoldField = Literal["relation_cycle_state", "relation_pattern"]
Emo = tuple[str, int]
Listener = tuple[str, str, int]
View = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class Turn:
    """One authored turn; see :func:`C` and :func:`T`."""

    speaker: str
    to: str
    text: str
    utype: str
    tone: str
    cues: str = ""
    emo: Emo | None = None
    lis: Listener | None = None
    vp: tuple[View, ...] = ()
    st: tuple[str, str] | None = None
    sto: str | None = None
    bg: tuple[str, str, str] | None = None
    rel: str | None = None


@dataclass(frozen=True, slots=True)
class Phase:
    """From here on, rows carry this relation pattern (``""``: none).

    ``zero`` reproduces a release quirk: evidence-row lists that start at row 0.
    """

    label: str
    reason: str = ""
    zero: bool = False


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    scenario: Scenario
    participants: tuple[str, ...]
    gold_field: GoldField
    start: float
    script: tuple[Turn | Phase, ...]


def C(
    speaker: str,
    to: str,
    utype: str,
    text: str,
    tone: str,
    cues: str = "",
    *,
    emo: Emo | None = None,
    lis: Listener | None = None,
    vp: tuple[View, ...] = (),
    bg: tuple[str, str, str] | None = None,
    rel: str | None = None,
) -> Turn:
    """A client turn: speaker, addressees (comma-separated), utterance type, words, tone, cues, labels."""
    return Turn(speaker, to, text, utype, tone, cues, emo, lis, vp, None, None, bg, rel)


def T(
    to: str,
    text: str,
    tone: str,
    cues: str = "",
    *,
    st: tuple[str, str] | None = None,
    sto: str | None = None,
    lis: Listener | None = None,
    bg: tuple[str, str, str] | None = None,
    rel: str | None = None,
) -> Turn:
    """A therapist turn; ``st`` = (strategy, intention) aimed at ``sto`` (default: the addressees)."""
    return Turn(THERAPIST, to, text, "", tone, cues, None, lis, (), st, sto, bg, rel)


def P(label: str, reason: str = "", *, zero: bool = False) -> Phase:
    return Phase(label, reason, zero)


# fmt: off
NADIA_TOM = Conversation(
    "demo_couple/nadia_and_tom_s01", "couple", ("Nadia", "Tom"),
    "relation_cycle_state", 0.0, (
    P(""),
    T("Couple", "Last time you both said you wanted your evenings to feel less like two strangers passing. "
      "Where are you with that this week?",
      "warm, even", "b=leans forward slightly; i=looks from one to the other",
      st=("goal_align", "Re-orients the couple to the shared goal they named in the previous session.")),
    C("Nadia", "Therapist", "recollection",
      "Honestly, worse. He was at the office until ten on Tuesday and Thursday.",
      "clipped, frustrated",
      "b=sits upright, angled away from Tom; f=tight-lipped; s=twists her wedding ring",
      emo=("feels lonely and irritated", 6),
      vp=(("Tom", "he keeps choosing work over their evenings", "resentful"),)),
    P("pursue_withdraw", "Nadia presses Tom about his late nights while Tom answers briefly, looks away "
      "and asks to drop the subject."),
    C("Tom", "Therapist", "defense", "It was a deadline week. I told her that on Sunday.",
      "flat, low", "b=leans back, arms folded; f=avoids eye contact",
      emo=("feels accused and tired", 5),
      vp=(("Nadia", "she forgets what he tells her and only remembers the lateness", "defensive"),)),
    C("Nadia", "Tom", "accusation", "Every week is a deadline week, Tom. There is always a reason.",
      "rising, sharp", "i=turns to face him directly; f=eyebrows raised",
      emo=("feels dismissed and angry", 7),
      vp=(("Tom", "he hides behind work excuses", "critical"),)),
    C("Tom", "Nadia", "withdrawal", "Okay. I don't really know what you want me to say.",
      "quiet, resigned",
      "b=shrugs and sinks lower into the couch; f=looks at the floor; s=rubs his forehead",
      emo=("feels hopeless and shut down", 6)),
    C("Nadia", "Tom", "request", "I want you to say you actually miss me. Just once would be nice.",
      "pleading under the irritation", "f=eyes glistening; i=leans toward him",
      emo=("feels desperate for connection", 7),
      vp=(("Tom", "he no longer seems to miss her", "hurt"),)),
    C("Tom", "Nadia", "withdrawal", "Of course I do. Can we please not do this here?",
      "muted, tense", "s=picks at a loose thread on his sleeve; i=glances at her, then away",
      emo=("feels exposed and overwhelmed", 6),
      vp=(("Nadia", "she turns every session into a trial of him", "guarded"),)),
    T("Nadia,Tom", "Can I slow us down for a second? Something just happened between you two that I think "
      "happens at home too.",
      "calm, deliberate", "i=raises a hand gently between them",
      st=("track", "Interrupts the exchange and names that a familiar sequence is unfolding in the room.")),
    T("Nadia", "Nadia, as Tom looked down and said 'not here', what happened inside you?",
      "soft, curious", "b=turns toward Nadia",
      st=("evoke", "Invites the feeling underneath Nadia's frustration at the moment Tom pulls away.")),
    C("Nadia", "Therapist", "disclosure", "It felt like a door closing. Like I'm too much again.",
      "softer, shaky", "f=blinks quickly; s=presses her palms together",
      emo=("feels rejected and ashamed of needing him", 7),
      vp=(("Tom", "he shuts her out when she reaches for him", "hurt"),)),
    T("Nadia", "Too much. And when you feel too much, you push harder to get him back.",
      "gentle, slow", "f=nods slowly",
      st=("track", "Links Nadia's sense of being too much to her pursuing move in the cycle.")),
    C("Nadia", "Therapist", "reflection", "Yes. I get louder because being quiet never seems to reach him.",
      "thoughtful", "f=looks down; s=exhales",
      emo=("feels sad and a little relieved to be understood", 5),
      vp=(("Tom", "quiet requests do not reach him", "frustrated"),)),
    T("Nadia", "Mm.", "soft", "f=nods", rel=""),
    T("Tom", "Tom, what is it like for you when Nadia gets louder?",
      "even, inviting", "b=turns toward Tom",
      st=("counterbalance", "Brings Tom, who has gone quiet, back into the conversation.")),
    C("Tom", "Therapist", "disclosure", "Like I'm failing an exam I didn't know I was taking.",
      "slow, low", "b=leans forward, elbows on knees; f=brow furrowed",
      emo=("feels inadequate and anxious", 6),
      vp=(("Nadia", "she grades him and he always comes up short", "wary"),)),
    P("attack_attack", "Both partners blame and counter-blame: Nadia rejects the exam image and Tom "
      "counters with her complaints to her sister."),
    C("Nadia", "Tom", "accusation", "That's not fair. I'm not grading you, I'm asking for dinner together.",
      "sharp, indignant", "i=points at him; f=frowns",
      emo=("feels misunderstood and angry", 7),
      vp=(("Tom", "he turns her needs into criticism", "indignant"),)),
    C("Tom", "Nadia", "accusation",
      "You literally keep a tally. You told your sister I'd missed six dinners.",
      "raised, heated", "b=sits up abruptly; f=jaw clenched; i=turns toward her",
      emo=("feels humiliated and angry", 7),
      vp=(("Nadia", "she complains about him to her family", "resentful"),),
      bg=("Nadia", "Tom", "Because you had.")),
    C("Nadia", "Tom", "defense", "Because you had! Am I supposed to pretend it's all fine?",
      "loud", "s=shakes her head; f=eyes wide",
      emo=("feels cornered and furious", 8),
      vp=(("Tom", "he wants her to pretend everything is fine", "contemptuous"),)),
    T("Tom",
      "Let me step in here. Tom, I can see your breathing has changed. Let's take a breath before we go on.",
      "slow, grounding", "b=leans toward Tom; i=holds eye contact with Tom",
      lis=("Tom", "feels flooded", 7),
      st=("safeguard", "Protects Tom, who shows signs of flooding, by pausing the escalation.")),
    P("mixed_transition", "The attack-attack exchange is interrupted; both partners are still guarded but "
      "start to reflect on the cycle instead of fighting inside it."),
    C("Tom", "Therapist", "other", "Yeah. Sorry. I'm okay, just give me a second.",
      "breathless, quieter", "s=exhales slowly and rubs his palms on his jeans",
      emo=("feels flooded and embarrassed", 6)),
    T("Couple", "What I'm seeing is a dance. Nadia reaches, Tom feels judged and pulls back, and Nadia "
      "reaches harder. Neither of you is the villain here. The dance is.",
      "warm, measured", "i=traces a circle in the air with one hand",
      st=("reframe",
      "Recasts the fight as a shared pursue-withdraw cycle rather than one partner's fault.")),
    C("Nadia", "Therapist", "validation", "That's true. That's exactly what happens on Sunday nights.",
      "quieter", "f=slight nod; s=loosens her grip on her ring",
      emo=("feels recognised and tentative", 4)),
    C("Tom", "Therapist", "reflection", "I think I go quiet because anything I say makes it worse.",
      "reflective", "f=looks at his hands",
      emo=("feels sad and stuck", 5),
      vp=(("Nadia", "his words only make her angrier", "resigned"),)),
    T("Tom", "Anything you say makes it worse. So going quiet is how you try to protect the two of you?",
      "soft, tentative", "f=tilts head",
      st=("evoke", "Invites Tom to name the protective fear behind his silence.")),
    C("Tom", "Therapist", "disclosure", "Yes. If I stay quiet, at least I can't disappoint her more.",
      "low, voice catching", "f=eyes reddening; s=clasps his hands tightly",
      emo=("feels afraid of losing her", 7), lis=("Nadia", "feels surprised and moved", 5),
      vp=(("Nadia", "she is already disappointed in him", "anxious"),)),
    P("repair_softening", "Tom discloses the fear beneath his withdrawal and Nadia answers with softness "
      "and an apology instead of criticism."),
    T("Tom", "Could you turn to Nadia and tell her that, in your own words?",
      "gentle, encouraging", "i>Tom,Nadia=gestures from Tom toward Nadia",
      st=("enact", "Asks Tom to say his fear directly to Nadia rather than to the therapist.")),
    C("Tom", "Nadia", "disclosure",
      "When I go quiet, it's not that I don't care. I'm scared I've already let you down.",
      "soft, halting", "i=turns toward her and holds her gaze; f=eyes wet",
      emo=("feels vulnerable and scared", 7),
      vp=(("Nadia", "she matters to him more than he shows", "tender"),)),
    C("Nadia", "Tom", "validation", "I didn't know that. I really thought you just didn't want to be home.",
      "gentle, surprised", "f=face softens, eyes wet; i=reaches over and touches his knee",
      emo=("feels relieved and sad", 6),
      vp=(("Tom", "he cares more than she believed", "tender"),)),
    T("Nadia", "What happens in you, hearing that he's scared rather than indifferent?",
      "quiet, warm", "b=leans back to give them space",
      st=("join", "Helps Nadia take in Tom's fear so that his emotion can be received.")),
    C("Nadia", "Therapist", "disclosure", "It makes me want to stop yelling. I feel less alone with it.",
      "soft", "f=small tearful smile",
      emo=("feels tender and hopeful", 5),
      vp=(("Tom", "he is in this with her after all", "hopeful"),)),
    T("Nadia", "Mm-hm.", "soft", "f=nods", rel=""),
    C("Nadia", "Tom", "repair",
      "I'm sorry about telling my sister. That was me being hurt, and it wasn't fair to you.",
      "sincere", "i=squeezes his hand",
      emo=("feels remorseful and warm", 5),
      vp=(("Tom", "he deserved privacy about their problems", "apologetic"),)),
    C("Tom", "Nadia", "repair", "Thanks. And I'm sorry about Tuesday. I should have called you.",
      "warm, quiet", "f=small smile; i=squeezes her hand back",
      emo=("feels relieved and closer", 4),
      vp=(("Nadia", "she can be generous with him", "grateful"),)),
    T("Nadia,Tom", "This is the other side of the dance. Can you both notice how different this feels?",
      "warm", "i=looks from one to the other",
      st=("track", "Highlights the new, softer sequence while it is happening.")),
    C("Tom", "Therapist", "reflection", "It feels lighter. I don't feel like I'm on trial.",
      "relieved", "b=shoulders drop",
      emo=("feels lighter and hopeful", 4),
      vp=(("Nadia", "she can be gentle with him", "appreciative"),)),
    P("mixed_transition", "Repair is present, but Nadia's doubt signals the old pursuit may come back; "
      "softening and pursuit signals coexist."),
    C("Nadia", "Therapist", "disclosure", "I still worry it'll be back to normal by Tuesday, though.",
      "uneasy", "s=twists her ring again",
      emo=("feels worried and doubtful", 5),
      vp=(("Tom", "his changes may not last", "doubtful"),)),
    T("Couple", "That worry makes sense after a long pattern. Maybe this week the goal is just to catch "
      "the dance when it starts, together.",
      "steady, reassuring", "i=opens both hands toward them",
      st=("goal_align", "Turns the couple toward one small shared task for the coming week.")),
    C("Tom", "Nadia", "request", "Maybe if I'm running late, you text me 'dance' and I'll call you.",
      "light, tentative", "f=half smile; i=nudges her shoulder with his",
      emo=("feels hopeful", 4),
      vp=(("Nadia", "she can help him notice the pattern", "cooperative"),)),
    C("Nadia", "Tom", "validation", "Okay. I can do that. And you actually call.",
      "half-smiling", "f=smiles and raises an eyebrow",
      emo=("feels cautiously hopeful", 4)),
    T("Nadia,Tom", "Mm. Let's stop there for today.", "warm", "b=sits back", rel=""),
))

PRIYA_SAM = Conversation(
    "demo_couple/priya_and_sam_s02", "couple", ("Priya", "Sam"),
    "relation_cycle_state", 0.48, (
    P(""),
    T("Couple", "You both looked pretty tense coming in. What happened?", "gentle", "f=concerned look"),
    P("attack_attack",
      "Priya and Sam trade blame over his mother's visit, each defending and counterattacking."),
    C("Priya", "Therapist", "recollection",
      "His mother rearranged my kitchen on Saturday, and he just stood there and watched.",
      "tight, sarcastic", "i>Sam=gestures at Sam without looking at him; f=lips pressed",
      emo=("feels unsupported and angry", 7),
      vp=(("Sam", "he never stands up for her with his mother", "bitter"),)),
    C("Sam", "Priya", "defense", "She was trying to help. You make everything she does into an attack.",
      "sharp, raised", "b=turns his body toward Priya",
      emo=("feels defensive and irritated", 7),
      vp=(("Priya", "she treats his mother as an enemy", "critical"),)),
    C("Priya", "Sam", "accusation", "Help? She threw out my spices, Sam. My mum's spices.",
      "loud, breaking on 'mum'", "f=eyes flash, then well up",
      emo=("feels violated and furious", 8),
      vp=(("Sam", "he minimises what his mother did", "indignant"),)),
    C("Sam", "Priya", "accusation",
      "And you've been cold to her since the day she arrived. Everybody notices.",
      "heated", "i=points at her",
      emo=("feels angry and caught in the middle", 7),
      vp=(("Priya", "she has been cold and unwelcoming", "accusatory"),),
      bg=("Priya", "Sam", "Everybody who?")),
    C("Priya", "Sam", "accusation", "Of course you'd take her side. You always take her side.",
      "cutting", "s=crosses her arms hard; f=eyes narrowed",
      emo=("feels betrayed", 8),
      vp=(("Sam", "he always sides with his mother", "betrayed"),)),
    T("Priya,Sam", "Let me pause you both. This is moving really fast, and I don't think either of you is "
      "feeling heard right now.",
      "firm, calm", "i=holds up both palms",
      st=("track", "Names the rapid escalation that both partners are caught in.")),
    C("Sam", "Therapist", "other", "I'm not even sure what we're arguing about anymore.",
      "exasperated", "s=runs his hands through his hair",
      emo=("feels confused and drained", 6)),
    T("Sam", "Mm. Hard to keep track.", "soft", "f=nods", rel=""),
    T("Priya", "Priya, I noticed your voice caught when you said your mum's spices. What was that?",
      "soft, curious", "b=turns toward Priya",
      st=("evoke", "Invites the grief underneath Priya's anger.")),
    P("mixed_transition", "The attack exchange gives way to Priya's grief while Sam's defensiveness is "
      "still present; the couple is pivoting."),
    C("Priya", "Therapist", "disclosure",
      "They were the last spices she ground herself before she got sick.",
      "quiet, trembling", "f=tears; s=wipes her eyes with her sleeve",
      emo=("feels grief and loss", 8), lis=("Sam", "feels stunned and guilty", 6)),
    C("Sam", "Priya", "defense", "I didn't know she threw those out. I wasn't even in the kitchen.",
      "quieter, still guarded", "f=brow creased; i=looks at her for the first time",
      emo=("feels guilty and defensive", 6),
      vp=(("Priya", "she blames him for something he did not see", "defensive"),)),
    T("Sam", "Sam, before explaining, can you just take in what Priya said about her mother?",
      "gentle, firm", "i=places a hand flat on the table toward Sam",
      st=("safeguard", "Protects Priya's emerging grief from being overridden by Sam's explanations.")),
    C("Sam", "Therapist", "validation", "Yeah. Those spices matter to her. I know that.",
      "softer", "f=looks at Priya",
      emo=("feels sad and ashamed", 6),
      vp=(("Priya", "her grief for her mother is real", "sympathetic"),)),
    T("Sam", "Could you tell her that, directly?",
      "encouraging", "i>Sam,Priya=gestures toward Priya",
      st=("enact", "Asks Sam to acknowledge Priya's loss to her directly.")),
    C("Sam", "Priya", "repair", "I'm sorry, Pri. I should have stopped her. I know what those jars meant.",
      "gentle", "i=reaches for her hand",
      emo=("feels remorseful", 6),
      vp=(("Priya", "she deserved his protection", "remorseful"),)),
    C("Priya", "Sam", "withdrawal", "Fine. It's done now anyway, so whatever.",
      "flat", "b=pulls her hand back; f=looks away toward the window",
      emo=("feels numb and guarded", 6)),
    P("pursue_withdraw", "Sam now presses for reassurance while Priya pulls back and closes the topic."),
    C("Sam", "Priya", "request", "Don't do that. Don't just say fine. Talk to me.",
      "urgent", "i=leans toward her",
      emo=("feels anxious and shut out", 7),
      vp=(("Priya", "she shuts him out when she is hurt", "frustrated"),)),
    C("Priya", "Sam", "withdrawal", "There's nothing else to say, honestly.",
      "flat", "s=folds her arms",
      emo=("feels exhausted and guarded", 6),
      vp=(("Sam", "talking to him changes nothing", "resigned"),)),
    T("Priya,Sam", "Interesting. A minute ago Priya was reaching and Sam was defending. Now Sam's reaching "
      "and Priya's stepping back.",
      "curious, even", "i=points from one to the other",
      st=("track", "Names the switch of positions in the pursue-withdraw sequence.")),
    T("Priya", "Priya, what makes it safer to step back right now?",
      "soft", "b=turns toward Priya",
      st=("counterbalance", "Invites Priya, who has withdrawn, back into the conversation.")),
    C("Priya", "Therapist", "disclosure",
      "If I let myself care, and he sides with her again, it hurts twice.",
      "slow, quiet", "f=jaw trembles",
      emo=("feels afraid of being hurt again", 7),
      vp=(("Sam", "he cannot be relied on when his mother is around", "distrustful"),)),
    T("Couple", "So this isn't really Priya against his mother, or Sam against Priya. It's a triangle that "
      "gets all three of you stuck, and it's hurting the two of you.",
      "measured", "i=draws a triangle in the air",
      st=("reframe", "Moves the blame into a relational frame: a triangle that traps the couple.")),
    C("Sam", "Therapist", "disclosure", "I freeze around her. I've done it since I was a kid.",
      "reflective, low", "f=stares at the floor",
      emo=("feels ashamed and young", 6)),
    T("Sam", "Freeze. Like a boy trying to keep everybody happy?",
      "gentle", "f=soft expression",
      st=("evoke", "Invites the younger, frightened part of Sam behind the freeze.")),
    C("Sam", "Therapist", "recollection", "Yeah. Dad would leave, and I was the one calming Mum down.",
      "quiet", "s=rubs his thumb across his knuckles",
      emo=("feels sad and burdened", 6)),
    C("Priya", "Sam", "validation", "I didn't connect that. That's a lot for a kid to carry.",
      "softened", "f=eyes soften; i=turns to look at him",
      emo=("feels compassionate", 5),
      vp=(("Sam", "he carried too much as a child", "compassionate"),)),
    P("repair_softening",
      "Both partners drop the blame; Sam names his childhood freeze and Priya answers with compassion."),
    T("Priya,Sam", "Can we step back together and look at this? When his mum visits, Sam freezes, Priya "
      "feels alone and fights, and Sam freezes more. That loop is the enemy, not each other.",
      "warm, steady", "i=sweeps a hand in a circle between them",
      st=("detach", "Helps both partners step back and see the freeze-and-fight loop as a shared pattern.")),
    C("Sam", "Priya", "reflection", "Yeah. When I freeze, you're left on your own with it.",
      "thoughtful", "f=looks at Priya",
      emo=("feels regretful", 5),
      vp=(("Priya", "she has been left alone to deal with his mother", "sympathetic"),)),
    C("Priya", "Sam", "disclosure",
      "And when I fight, you probably feel like a kid again with your dad gone.",
      "gentle", "i=rests her hand on his arm",
      emo=("feels tender and sad", 5),
      vp=(("Sam", "her anger pushes him back into his childhood role", "understanding"),)),
    T("Couple", "So what would you two want to do differently in the two weeks she's still staying?",
      "practical, warm", "b=leans forward",
      st=("goal_align", "Orients the couple toward a shared plan for the rest of the visit.")),
    P("constructive_alignment",
      "The partners build on each other's ideas and agree a joint plan for the rest of the visit."),
    C("Sam", "Priya", "request", "Could we agree that the kitchen is yours, and I'll tell her that myself?",
      "hopeful", "i=turns toward her",
      emo=("feels determined and nervous", 5),
      vp=(("Priya", "she deserves a space of her own in their home", "supportive"),)),
    C("Priya", "Sam", "validation", "Yes. And I'll try one outing with her, just the two of us.",
      "warmer", "f=small smile",
      emo=("feels hopeful", 5),
      vp=(("Sam", "he is willing to stand up for her", "appreciative"),)),
    C("Sam", "Priya", "validation", "She'd love that. Honestly, that would mean a lot to me.",
      "warm", "f=smiles",
      emo=("feels grateful", 5)),
    T("Sam", "Sam, how will you know when you're starting to freeze?",
      "curious", "b=turns toward Sam",
      st=("track", "Helps Sam notice the first step of his part of the cycle.")),
    C("Sam", "Therapist", "reflection", "My shoulders go up and I start agreeing with everything she says.",
      "wry", "s=rolls his shoulders",
      emo=("feels self-aware and slightly embarrassed", 4)),
    T("Sam", "Good. That's a useful early signal.", "warm", "f=nods", rel=""),
    C("Priya", "Sam", "request", "Then maybe I just touch your arm. Like a signal between us.",
      "playful, gentle", "i=touches his arm lightly",
      emo=("feels close", 4),
      vp=(("Sam", "he can be reached when she signals gently", "affectionate"),)),
    C("Sam", "Priya", "validation", "Deal. Touch the arm, and I'll come back to you.",
      "warm", "f=grins",
      emo=("feels connected", 4)),
    T("Priya,Sam", "Mm. That's a real plan, and you made it together.", "warm", "f=smiles", rel=""),
    T("Priya", "Priya, anything you need Sam to hear before we finish?",
      "gentle", "b=turns toward Priya",
      st=("counterbalance", "Gives Priya the last word so that both voices are balanced at the close.")),
    C("Priya", "Sam", "disclosure", "Just that I miss you when she's here. I miss us.",
      "soft", "i=leans her head on his shoulder",
      emo=("feels longing and tender", 6),
      vp=(("Sam", "he feels far away during the visit", "longing"),)),
    C("Sam", "Priya", "validation", "I miss us too.",
      "tender", "i=puts his arm around her",
      emo=("feels tender", 5)),
))

GRACE_MALIK = Conversation(
    "demo_couple/grace_and_malik_s01", "couple", ("Grace", "Malik"),
    "relation_pattern", 0.0, (
    P(""),
    T("Couple", "It's been three weeks since we last met. How have things been between you?",
      "warm, open", "b=relaxed, hands folded"),
    P("withdraw_withdraw",
      "Both partners give brief, flat answers and steer away from the distance between them."),
    C("Grace", "Therapist", "other", "Fine, I think. Busy. The kids had exams.",
      "flat", "b=sits at the far end of the couch; f=polite smile",
      emo=("feels tired and guarded", 4)),
    C("Malik", "Therapist", "other", "Yeah, pretty much the same as usual.",
      "monotone", "b=slouched; f=neutral, gaze down",
      emo=("feels numb", 4)),
    T("Grace,Malik", "Same as usual. When we last met, usual meant barely talking after the kids go to bed.",
      "gentle, probing", "i=looks from one to the other",
      st=("track", "Follows the couple's shared avoidance by naming what 'usual' means.")),
    C("Grace", "Therapist", "withdrawal", "We talk. About logistics, mostly. It's easier that way.",
      "clipped", "s=smooths her skirt repeatedly",
      emo=("feels lonely but resigned", 5),
      vp=(("Malik", "he does not want deeper conversations", "resigned"),)),
    C("Malik", "Therapist", "withdrawal", "There isn't much to say. I'm still looking for work.",
      "low", "s=checks his watch",
      emo=("feels ashamed", 6),
      vp=(("Grace", "she is tired of hearing about his job search", "resigned"),)),
    T("Malik", "Still looking. Seven months now. What's that been like, underneath the busy?",
      "soft", "b=leans toward Malik",
      st=("evoke", "Invites the feelings underneath Malik's matter-of-fact report.")),
    C("Malik", "Therapist", "withdrawal", "It is what it is. I don't like dwelling on it.",
      "flat, clipped", "b=shifts away; f=tight jaw",
      emo=("feels ashamed and defensive", 6)),
    T("Grace", "Grace, when Malik says it is what it is, what happens for you?",
      "curious", "b=turns toward Grace",
      st=("counterbalance", "Turns to Grace, who has stayed on the sidelines of Malik's story.")),
    C("Grace", "Therapist", "disclosure", "I stop asking. I don't want to make him feel any worse.",
      "quiet", "f=glances at Malik, then away",
      emo=("feels helpless and sad", 6),
      vp=(("Malik", "he is fragile and easily hurt by questions", "protective"),)),
    T("Grace,Malik", "So Grace protects Malik by not asking, and Malik protects Grace by not telling. And "
      "you each end up alone.",
      "warm, slow", "i=opens both hands toward them",
      st=("reframe", "Recasts the mutual silence as each partner's attempt to protect the other.")),
    C("Malik", "Therapist", "validation", "That's, yeah, that is probably right.",
      "slow", "f=looks up for the first time",
      emo=("feels seen and uneasy", 5)),
    P("pursue_withdraw", "Grace begins to reach for Malik while he deflects with jokes and a sharp retort."),
    C("Grace", "Malik", "request", "I'd rather you told me. Even the bad days.",
      "tentative", "i=turns toward him",
      emo=("feels hopeful and nervous", 5),
      vp=(("Malik", "he could trust her with his bad days", "encouraging"),)),
    C("Malik", "Grace", "withdrawal", "The bad days are most days. Not exactly dinner conversation.",
      "wry, deflecting", "f=forced half smile",
      emo=("feels embarrassed", 6)),
    C("Grace", "Malik", "accusation", "See, you do this. You make a joke and the door shuts.",
      "frustrated", "i=gestures toward him",
      emo=("feels shut out and frustrated", 6),
      vp=(("Malik", "he uses humour to shut her out", "frustrated"),)),
    C("Malik", "Grace", "defense", "What do you want, a daily report of rejections?",
      "irritated", "b=leans away",
      emo=("feels cornered", 6),
      vp=(("Grace", "she wants to monitor his failures", "defensive"),)),
    T("Malik", "Malik, I don't think Grace is asking for a report. Could you tell her what the rejections "
      "actually feel like?",
      "gentle, steady", "i>Malik,Grace=gestures toward Grace",
      st=("enact", "Asks Malik to share what the rejections feel like directly with Grace.")),
    P("repair_softening",
      "Malik discloses his shame and Grace receives it warmly; defensiveness drops on both sides."),
    C("Malik", "Grace", "disclosure",
      "They make me feel like I'm not a man anymore. Like I'm useless to you.",
      "halting, hoarse", "f=eyes tear up; s=grips the armrest",
      emo=("feels deeply ashamed and useless", 8), lis=("Grace", "feels shocked and tender", 6),
      vp=(("Grace", "she might see him as useless now", "fearful"),)),
    T("Grace", "Grace, can you let Malik know how that lands for you?",
      "quiet, warm", "b=leans back slightly",
      st=("join", "Helps Grace receive Malik's shame and answer from empathy.")),
    C("Grace", "Malik", "validation", "You're not useless. I'm sorry you've been carrying that alone.",
      "soft", "i=reaches over and takes his hand",
      emo=("feels compassionate and sad", 6),
      vp=(("Malik", "he has been carrying his shame alone", "compassionate"),)),
    C("Malik", "Grace", "disclosure", "I thought you'd be disappointed if I said it out loud.",
      "quiet", "f=looks at their hands",
      emo=("feels relieved and exposed", 6),
      vp=(("Grace", "she is kinder about his job loss than he expected", "relieved"),)),
    T("Malik", "And you're hearing something different now?", "soft", "f=slight smile", rel=""),
    C("Malik", "Therapist", "reflection", "Yeah. She's not angry. She's been lonely.",
      "wondering", "f=brow relaxes",
      emo=("feels surprised and sad", 5),
      vp=(("Grace", "she has been lonely rather than angry", "empathic"),)),
    C("Grace", "Malik", "disclosure", "I have been lonely. I miss laughing with you in the kitchen.",
      "wistful", "f=small sad smile",
      emo=("feels longing", 6)),
    T("Grace,Malik", "I want to slow down here and just let you both have this moment.",
      "hushed", "b=still, hands in lap"),
    C("Malik", "Grace", "repair", "I'm sorry I shut you out. I'll try to tell you when it's a bad day.",
      "sincere", "i=holds her hand in both of his",
      emo=("feels remorseful and hopeful", 5),
      vp=(("Grace", "she deserves to know about his bad days", "committed"),)),
    T("Grace", "That apology took courage. Grace, can you let him know you heard it?",
      "warm", "b=turns toward Grace",
      st=("repair", "Supports Malik's apology by helping Grace acknowledge it.")),
    C("Grace", "Malik", "validation", "I heard it. Thank you for saying that to me.",
      "moved", "f=tearful smile",
      emo=("feels moved and relieved", 5),
      vp=(("Malik", "his apology is sincere", "appreciative"),)),
    T("Couple", "That's a big step for both of you. What might get in the way this week?",
      "practical", "b=leans forward",
      st=("goal_align", "Turns the new openness into a shared goal by anticipating obstacles together.")),
    C("Malik", "Therapist", "reflection", "Pride, probably. And not wanting to worry her.",
      "honest", "s=rubs the back of his neck",
      emo=("feels thoughtful and a little sheepish", 4)),
    C("Grace", "Malik", "request", "Then worry me. I'd rather worry with you than guess.",
      "firm but warm", "i=squeezes his hand",
      emo=("feels determined and affectionate", 5),
      vp=(("Malik", "he does not need to shield her", "reassuring"),)),
    C("Malik", "Grace", "validation", "Okay. I can try that, one bad day at a time.",
      "wry, warm", "f=small laugh",
      emo=("feels lighter", 4)),
    T("Grace", "Mm-hm.", "soft", "f=nods", rel=""),
    C("Grace", "Therapist", "recollection",
      "When we first married, we walked after dinner and talked about everything.",
      "nostalgic", "f=faraway smile",
      emo=("feels wistful", 5)),
    C("Malik", "Grace", "request", "We could start walking again. Even just round the block.",
      "shy", "i=bumps her shoulder gently",
      emo=("feels hopeful", 5),
      vp=(("Grace", "she would welcome time alone together", "hopeful"),)),
    T("Grace,Malik", "That sounds like a good place to start.", "warm", "f=smiles", rel=""),
))

ELENA_CHRIS = Conversation(
    "demo_couple/elena_and_chris_s03", "couple", ("Elena", "Chris"),
    "relation_cycle_state", 2.1, (
    P("pursue_withdraw",
      "Elena presses Chris about the hidden card while Chris minimises, gives vague answers and turns away.",
      zero=True),
    T("Couple", "Last week ended on a hard note. Where would you like to pick up?",
      "calm", "b=hands folded"),
    C("Elena", "Therapist", "recollection",
      "I found another credit card statement in his car on Friday. Another one.",
      "controlled, cold", "s=holds a folded paper in her lap; f=stony",
      emo=("feels betrayed and furious", 8),
      vp=(("Chris", "he keeps lying about money", "distrustful"),)),
    C("Chris", "Therapist", "defense", "It's an old card. I was going to close it.",
      "evasive, quick", "f=half smile that fades; s=bounces his knee",
      emo=("feels caught and ashamed", 7),
      vp=(("Elena", "she assumes the worst about him", "defensive"),)),
    C("Elena", "Chris", "accusation", "There are charges from last Tuesday, Chris. That's not old.",
      "sharp", "i=holds the paper out toward him",
      emo=("feels angry and humiliated", 8),
      vp=(("Chris", "he lies even when the proof is in front of him", "contemptuous"),)),
    C("Chris", "Elena", "withdrawal", "I don't want to go through this line by line again.",
      "flat", "b=leans back and turns toward the window",
      emo=("feels overwhelmed and trapped", 7)),
    C("Elena", "Chris", "request", "Then just tell me the total. One number. The truth.",
      "pleading, hard", "i=leans toward him",
      emo=("feels desperate and anxious", 7),
      vp=(("Chris", "he hides the truth to avoid conflict", "distrustful"),)),
    T("Elena,Chris", "Let's pause. Elena, you're asking for the truth, and Chris, you're turning away. I "
      "think this is the loop we talked about.",
      "steady", "i=looks from one to the other",
      st=("track", "Names the pursue-withdraw loop as it happens in the room.")),
    T("Chris", "Chris, what happens inside right before you turn to the window?",
      "soft", "b=turns toward Chris",
      st=("evoke", "Invites the fear underneath Chris's turning away.")),
    C("Chris", "Therapist", "disclosure",
      "I panic. Every time she holds up a paper, I'm twelve and my dad is shouting about the bills.",
      "quiet", "f=eyes unfocused; s=grips his knees",
      emo=("feels panic and shame", 8), lis=("Elena", "feels surprised and unsettled", 5),
      vp=(("Elena", "her questions feel like his father's shouting", "fearful"),)),
    P("withdraw_withdraw",
      "After Chris's disclosure both partners retreat into silence and neither engages with the other."),
    C("Elena", "Therapist", "withdrawal", "I don't know what to do with that right now.",
      "flat, guarded", "b=sets the paper down and crosses her arms",
      emo=("feels conflicted and numb", 6)),
    C("Chris", "Therapist", "withdrawal", "Yeah. Maybe I shouldn't have said it at all.",
      "low", "b=head down",
      emo=("feels exposed and regretful", 6)),
    T("Elena,Chris", "You both went quiet just now. That's okay. It might be the first time in a while "
      "something true was said without a fight.",
      "gentle", "b=sits still, unhurried",
      st=("reframe", "Frames the shared silence as a response to real honesty rather than as failure.")),
    P(""),
    T("Elena", "Elena, you've been holding the whole budget alone for two months. What's that been like?",
      "warm", "b=turns toward Elena",
      st=("evoke", "Invites Elena's hurt beneath her anger at carrying the finances alone.")),
    C("Elena", "Therapist", "disclosure",
      "Exhausting. And lonely. I lie awake doing sums at three in the morning.",
      "tired", "s=rubs her temples",
      emo=("feels exhausted and alone", 7),
      vp=(("Chris", "he left her to carry the worry alone", "hurt"),)),
    T("Chris", "Chris, can you look at Elena and tell her what you understand about those nights?",
      "encouraging", "i>Chris,Elena=gestures toward Elena",
      st=("enact", "Asks Chris to speak to Elena directly about the cost of his secrecy.")),
    P("repair_softening", "Chris takes responsibility and Elena begins, cautiously, to let his apology in."),
    C("Chris", "Elena", "repair",
      "I did that to you. You shouldn't be up at three because of me. I'm sorry.",
      "slow, sincere", "i=turns his chair toward her and holds her gaze",
      emo=("feels remorseful", 7),
      vp=(("Elena", "she has suffered because of his secrecy", "remorseful"),)),
    C("Elena", "Chris", "other", "I've heard sorry before, Chris.",
      "guarded but quieter", "f=looks at him, unsmiling",
      emo=("feels wary", 6),
      vp=(("Chris", "his apologies have not held before", "skeptical"),)),
    T("Elena",
      "You have. And it makes sense to be careful. Can you say what would make this sorry different?",
      "validating", "f=nods slowly",
      st=("repair", "Acknowledges Elena's caution and helps define what the repair would need.")),
    C("Elena", "Chris", "request", "Show me everything. All the accounts, all at once. No more surprises.",
      "firm", "i=looks straight at him",
      emo=("feels determined and scared", 6),
      vp=(("Chris", "he must prove his honesty through action", "demanding"),)),
    C("Chris", "Elena", "validation", "Okay. You can have all the passwords tonight. I mean it.",
      "steady", "f=holds her gaze",
      emo=("feels scared but relieved", 6),
      vp=(("Elena", "she has a right to full transparency", "accepting"),)),
    T("Chris", "What's it like to say that out loud?", "soft", "f=curious", rel=""),
    C("Chris", "Therapist", "disclosure",
      "Terrifying. But also like I can breathe for the first time in months.",
      "shaky", "s=exhales loudly",
      emo=("feels relieved and vulnerable", 6)),
    T("Elena", "Elena, did you see his face just then?",
      "gentle", "i=nods toward Chris",
      st=("join", "Draws Elena's attention to Chris's relief so that his emotion can reach her.")),
    C("Elena", "Therapist", "reflection", "I did. He looked like he used to, before all this.",
      "softer", "f=expression softens",
      emo=("feels moved and uncertain", 5),
      vp=(("Chris", "the man she trusted is still there", "hopeful"),)),
    C("Elena", "Chris", "disclosure", "I don't want to be your dad with the bills. I just want a partner.",
      "soft", "i=touches his sleeve",
      emo=("feels sad and longing", 6),
      vp=(("Chris", "he has cast her as his angry father", "hurt"),)),
    C("Chris", "Elena", "validation", "You're not him. I know that, even when I panic.",
      "gentle", "i=covers her hand with his",
      emo=("feels tender and regretful", 5),
      vp=(("Elena", "she is nothing like his father", "reassuring"),)),
    T("Elena,Chris", "So now the task is one you share: a way to handle money that doesn't set off his "
      "panic or your three a.m. nights.",
      "warm, practical", "i=opens both hands toward them",
      st=("goal_align", "Turns both partners toward a shared task around money.")),
    P("constructive_alignment",
      "The partners build a joint plan for their money, each adding to the other's ideas."),
    C("Chris", "Elena", "request",
      "What if we sit down every Sunday with coffee and go through it together?",
      "hopeful", "b=leans forward",
      emo=("feels hopeful", 5),
      vp=(("Elena", "she could be a partner in the finances rather than an auditor", "hopeful"),)),
    C("Elena", "Chris", "validation", "Sunday works. And you bring the statements, not me.",
      "dry, warm", "f=small smile",
      emo=("feels cautiously hopeful", 5),
      vp=(("Chris", "he should take the lead in showing his accounts", "firm"),)),
    C("Chris", "Elena", "validation", "Fair. I'll bring them. Even the ugly ones.",
      "light", "f=laughs briefly",
      emo=("feels lighter", 4)),
    C("Elena", "Therapist", "request",
      "And if he panics, can we call a time-out instead of him disappearing?",
      "practical", "b=turns to the therapist",
      emo=("feels anxious but engaged", 5),
      vp=(("Chris", "he tends to disappear when stressed", "concerned"),)),
    T("Chris", "Chris, what do you think of that?", "curious", "b=turns toward Chris"),
    C("Chris", "Elena", "validation", "A time-out, twenty minutes, then I come back. I can do that.",
      "committed", "i=nods at her",
      emo=("feels determined", 5),
      vp=(("Elena", "she is offering him a way back rather than a punishment", "grateful"),)),
    T("Couple",
      "Listen to you two. Ten minutes ago this was a courtroom, and now you're building something.",
      "warm", "f=smiles",
      st=("track", "Highlights the shift from the accusing loop to joint problem solving.")),
    C("Elena", "Therapist", "other", "It still feels fragile. But it's better than the courtroom.",
      "tired but warm", "s=tucks her hair behind her ear",
      emo=("feels tired and cautiously hopeful", 5)),
    T("Elena", "Fragile is honest. We'll keep checking in on it.", "gentle", "f=nods", rel=""),
))

HARTLEY = Conversation(
    "demo_family/hartley_family_s01", "family", ("Dana", "Marcus", "Leo", "Ivy"),
    "relation_cycle_state", 0.0, (
    P(""),
    T("Family",
      "Thanks for coming in, all four of you. I know getting everyone here on a Thursday isn't easy.",
      "warm, welcoming", "i=makes eye contact with each in turn",
      st=("join", "Builds rapport with the whole family and acknowledges the effort of attending.")),
    C("Dana", "Therapist", "recollection",
      "It wasn't. Leo refused to get in the car until his dad talked him round.",
      "tight, tired", "b=perched on the edge of her seat",
      emo=("feels frustrated and worn out", 6),
      vp=(("Leo", "he resists everything she asks", "exasperated"),)),
    C("Leo", "Therapist", "withdrawal", "I'm here now, aren't I? So.",
      "flat, bored", "b=slumped, hood up; f=eyes on his phone; s=scrolls his phone",
      emo=("feels irritated and defensive", 5),
      vp=(("Dana", "she makes a big deal of everything", "dismissive"),)),
    T("Dana", "Dana, what brings you all in, from your point of view?", "even", "b=turns toward Dana"),
    P("pursue_withdraw", "Dana presses Leo about school and gaming while Leo deflects and disengages."),
    C("Dana", "Therapist", "disclosure",
      "He's missed eleven days of school this term. He's gaming until three in the morning.",
      "anxious, fast", "s=counts on her fingers",
      emo=("feels scared and frustrated", 7),
      vp=(("Leo", "he is throwing his future away", "worried"),)),
    C("Dana", "Leo", "request", "Leo, put the phone down. Please. This is about you.",
      "sharp", "i=reaches toward his phone",
      emo=("feels ignored and angry", 7)),
    C("Leo", "Dana", "withdrawal", "Whatever. You've already decided what it's about.",
      "mumbling", "b=turns his shoulder away",
      emo=("feels cornered and resentful", 6),
      vp=(("Dana", "she never listens to his side", "resentful"),)),
    C("Dana", "Leo", "accusation", "Because you never tell me anything! You just disappear into that room.",
      "loud", "f=flushed",
      emo=("feels shut out and furious", 7),
      vp=(("Leo", "he hides from the family in his room", "angry"),)),
    T("Leo", "Leo, I'm curious about your side. Your mum's told me hers.",
      "calm, interested", "b=turns toward Leo",
      st=("counterbalance", "Gives Leo, the member being talked about, room to speak for himself.")),
    C("Leo", "Therapist", "defense", "School is pointless right now. Nobody there even talks to me.",
      "low", "f=glances up briefly",
      emo=("feels lonely and ashamed", 6), lis=("Ivy", "feels worried", 5)),
    T("Leo", "Nobody talks to you?", "soft", "f=raised eyebrows", rel=""),
    P("cross_generational_coalition",
      "Marcus sides with Leo against Dana and dismisses her concern in front of the children."),
    C("Marcus", "Dana", "defense", "He's sixteen, Dana. I skipped school plenty and I turned out fine.",
      "casual, dismissive", "b=leans back, arm along the sofa behind Leo",
      emo=("feels irritated and protective", 5),
      vp=(("Dana", "she overreacts to normal teenage behaviour", "dismissive"),
          ("Leo", "he is just a normal teenager", "protective"))),
    C("Leo", "Marcus", "validation", "See, Dad gets it. It's not a big deal.",
      "smug", "i=nods toward his dad with a small grin",
      emo=("feels relieved and backed up", 4),
      vp=(("Marcus", "his dad is on his side", "allied"),)),
    C("Dana", "Marcus", "accusation",
      "Of course Dad gets it. Dad gets to be the fun one while I'm the police.",
      "bitter", "f=eyes narrow",
      emo=("feels undermined and alone", 8),
      vp=(("Marcus", "he undermines her and leaves her to enforce the rules", "resentful"),)),
    P("escalation_conflict", "Dana and Marcus trade accusations and the conflict between the parents "
      "escalates while the children watch."),
    C("Marcus", "Dana", "accusation", "Maybe if you weren't on him every minute, he'd actually talk to us.",
      "heated", "i=points at her",
      emo=("feels angry", 7),
      vp=(("Dana", "her constant pressure drives Leo away", "blaming"),)),
    C("Dana", "Marcus", "accusation", "Don't you dare put this on me. You're never even home before eight.",
      "shouting", "b=sits forward",
      emo=("feels furious and betrayed", 8),
      vp=(("Marcus", "he is absent and blames her unfairly", "furious"),),
      bg=("Leo", "Ivy", "Here we go.")),
    C("Ivy", "Dana,Marcus", "request", "Can you two not do this again? Leo, come on, just say sorry to Mum.",
      "tired, parental", "i>Leo=nudges Leo with her elbow",
      emo=("feels anxious and responsible", 6),
      vp=(("Leo", "he should smooth things over for everyone's sake", "impatient"),)),
    T("Leo", "Let me stop you all there. Leo's pulling his hood right over his face. This is a lot for him "
      "to sit in.",
      "firm, protective", "i=gestures gently toward Leo",
      lis=("Leo", "feels overwhelmed and small", 7),
      st=("safeguard", "Protects Leo, who is visibly overwhelmed by his parents' fight about him.")),
    T("Family", "I want to point out what just happened. Mum and Leo got stuck, Dad came in on Leo's side, "
      "the parents started fighting, and Ivy jumped in to calm everyone.",
      "measured", "i=points to each person in turn",
      st=("track", "Names the family sequence of pursuit, coalition, escalation and rescue.")),
    T("Ivy", "Ivy, is that a familiar job for you, calming things down?",
      "curious", "b=turns toward Ivy",
      st=("boundary", "Questions the peacekeeper role Ivy has taken on between her parents.")),
    C("Ivy", "Therapist", "disclosure",
      "Pretty much since I was twelve. Someone has to, or it goes on all night.",
      "matter-of-fact, weary", "s=twists her hair around a finger",
      emo=("feels tired and burdened", 6),
      vp=(("Dana", "her mother relies on her to keep the peace", "resigned"),)),
    T("Dana,Marcus",
      "Dana, Marcus, I don't think it's Ivy's job to referee the two of you. That's a job for the parents.",
      "firm, kind", "i=looks at each parent",
      st=("boundary", "Returns the job of managing conflict from Ivy to the parents.")),
    C("Marcus", "Therapist", "validation", "That's fair. We do lean on her a lot, don't we.",
      "subdued", "f=looks at Ivy",
      emo=("feels guilty", 5),
      vp=(("Ivy", "she has carried too much for her parents", "guilty"),)),
    T("Dana", "Dana, is there something you want Ivy to hear from you?",
      "gentle", "b=turns toward Dana",
      st=("repair", "Opens space for a parent to acknowledge the burden Ivy has carried.")),
    P("repair_softening", "The parents acknowledge Ivy's burden and soften; blame eases across the family."),
    C("Dana", "Ivy", "repair", "I'm sorry, love. You shouldn't have to fix us.",
      "soft, teary", "i=reaches for Ivy's hand",
      emo=("feels guilty and sad", 6),
      vp=(("Ivy", "she has had to parent her parents", "remorseful"),)),
    C("Ivy", "Dana", "validation", "It's okay. I just want it to stop.",
      "quiet", "f=eyes fill up",
      emo=("feels relieved and tearful", 6)),
    T("Dana,Leo",
      "Dana and Leo, I'd like to go back to the two of you. Can you turn your chairs toward each other?",
      "inviting", "i=gestures between Dana and Leo",
      st=("enact", "Moves mother and son into a direct exchange in the room.")),
    T("Dana", "Dana, instead of the school days, can you tell Leo what you're scared of?",
      "soft", "b=leans toward Dana",
      st=("reframe", "Shifts Dana's message from a list of school failures to her fear for Leo.")),
    C("Dana", "Leo", "disclosure", "I'm scared you're sad and hiding it. I'm scared I'm losing you.",
      "trembling", "i=looks directly at him; f=tears",
      emo=("feels frightened and tender", 8), lis=("Leo", "feels surprised and uncomfortable", 5),
      vp=(("Leo", "he may be hiding sadness from her", "worried"),)),
    T("Leo", "Leo, can you answer your mum directly? What's it like to hear that?",
      "gentle", "i>Leo,Dana=gestures toward Dana",
      st=("enact", "Keeps the exchange direct by asking Leo to answer his mother.")),
    C("Leo", "Dana", "disclosure", "I don't know. Kind of weird. I am sad sometimes, I guess.",
      "quiet", "b=pulls his hood down; s=fidgets with his phone case",
      emo=("feels exposed and sad", 6),
      vp=(("Dana", "she actually cares how he feels", "surprised"),)),
    C("Leo", "Dana", "recollection",
      "Since Max moved away, there's nobody at lunch. Online is the only place people talk to me.",
      "halting", "f=looks at the floor",
      emo=("feels lonely", 7)),
    C("Dana", "Leo", "validation", "I didn't know Max leaving hit you that hard. Thank you for telling me.",
      "gentle", "i=puts a hand on his shoulder",
      emo=("feels sad and grateful", 6),
      vp=(("Leo", "he has been lonely, not lazy", "compassionate"),)),
    T("Marcus", "Marcus, you've been quiet. What do you notice, watching them?",
      "curious", "b=turns toward Marcus",
      st=("counterbalance", "Brings Marcus, who has gone silent, back into the family conversation.")),
    C("Marcus", "Therapist", "reflection", "That I've been making it a joke when he's actually lonely.",
      "sober", "s=rubs his jaw",
      emo=("feels regretful", 6),
      vp=(("Leo", "his son is lonely, not just a normal teenager", "concerned"),)),
    T("Family", "It sounds like what looked like a school problem is really a loneliness problem, one "
      "that's hit this whole family in different ways.",
      "warm, thoughtful", "i=looks around the room",
      st=("reframe", "Reframes Leo's truancy as a shared family experience of loneliness.")),
    C("Ivy", "Therapist", "reflection", "Yeah. We're all kind of lonely in that house lately.",
      "wistful", "f=sad half smile",
      emo=("feels sad", 5),
      vp=(("Marcus", "her dad is rarely at home", "wistful"),)),
    T("Dana,Marcus",
      "Dana, Marcus, can the two of you agree on one thing for Leo this week? Not Ivy, not me. You two.",
      "firm, encouraging", "i=gestures between the parents",
      st=("boundary", "Strengthens the parental subsystem by having the parents decide together.")),
    P("cooperative_family_alliance",
      "The parents coordinate a joint plan and Leo and Ivy join in constructively."),
    C("Marcus", "Dana", "request", "Phone on the kitchen charger at midnight, and I'm the one who says it.",
      "decisive", "i=turns toward Dana",
      emo=("feels committed", 5),
      vp=(("Dana", "she should not be the only one enforcing rules", "supportive"),)),
    C("Dana", "Marcus", "validation", "Yes. And I'll stop checking his attendance app every hour.",
      "relieved", "f=small smile",
      emo=("feels supported", 5),
      vp=(("Marcus", "he is finally backing her up", "relieved"),)),
    C("Leo", "Dana,Marcus", "request", "Midnight on school nights. What about one o'clock on weekends?",
      "negotiating", "b=sits up",
      emo=("feels cautious and hopeful", 4),
      vp=(("Dana", "she might actually negotiate with him", "hopeful"),)),
    C("Marcus", "Leo", "validation", "Weekends one. Deal, if you're at school all next week.",
      "firm but warm", "i=holds out a fist for a bump",
      emo=("feels proud", 4),
      vp=(("Leo", "he can keep his side of a deal", "trusting"),)),
    C("Leo", "Marcus", "other", "Fine. Deal. That's actually okay.",
      "grudging", "f=small smile; i=bumps his dad's fist",
      emo=("feels grudging acceptance", 3)),
    T("Ivy", "Ivy, notice that your parents and Leo sorted that out without you.",
      "light, warm", "b=turns toward Ivy",
      st=("boundary",
      "Frees Ivy from the mediator role by pointing out that the others managed without her.")),
    C("Ivy", "Therapist", "disclosure", "It's strange, honestly. I don't know what to do with my hands.",
      "amused", "s=laughs and holds her hands up",
      emo=("feels relieved and a bit lost", 4)),
    T("Family", "Let's end there. You did hard work as a family today.",
      "warm", "f=smiles at each of them",
      st=("join", "Affirms the family's effort to keep them engaged in the work.")),
))

MORENO = Conversation(
    "demo_family/moreno_family_s02", "family", ("Ruth", "Carla", "Jade"),
    "relation_pattern", 1.2, (
    P(""),
    T("Family", "So, who'd like to start today?", "open, relaxed", "i=looks around at all three"),
    P("mutual_disengagement",
      "No one takes up the invitation; all three give minimal answers and avoid the topic."),
    C("Carla", "Therapist", "withdrawal", "I don't mind. Anyone can start, really.",
      "flat, polite", "b=handbag on her lap, both hands on it",
      emo=("feels anxious and guarded", 5)),
    C("Jade", "Therapist", "withdrawal", "I don't really have anything to say.",
      "quiet", "f=looks at her shoes; s=pulls her sleeves over her hands",
      emo=("feels uneasy", 5)),
    C("Ruth", "Therapist", "other", "We're here because the school suggested it, that's all.",
      "brisk", "b=upright, coat still buttoned",
      emo=("feels embarrassed and defensive", 5)),
    T("Ruth", "The school suggested it?", "neutral", "f=raised eyebrows"),
    C("Ruth", "Therapist", "other", "Jade's teacher said she seems tired all the time.",
      "clipped", "f=tight lips",
      emo=("feels worried and embarrassed", 5),
      vp=(("Jade", "she is worn out", "concerned"),)),
    T("Family", "It sounds like nobody's quite sure this is worth talking about. That's alright. Families "
      "often go quiet when something hurts.",
      "gentle", "b=open posture",
      st=("join", "Lowers defensiveness by normalising the family's reluctance to speak.")),
    C("Carla", "Therapist", "disclosure",
      "It's been a hard year. Since the divorce, we just get on with things.",
      "tired", "s=fiddles with the clasp of her bag",
      emo=("feels weary", 5)),
    T("Jade", "Jade, what does getting on with things look like for you?",
      "warm", "b=turns toward Jade",
      st=("counterbalance", "Brings the youngest and quietest member into the conversation.")),
    P("boundary_hierarchy_strain",
      "Jade describes acting as her mother's carer and confidant; parent and child roles are reversed."),
    C("Jade", "Therapist", "recollection", "I make dinner most nights. Mum's usually too tired after work.",
      "matter-of-fact", "f=shrugs",
      emo=("feels responsible and tired", 5),
      vp=(("Carla", "her mum needs looking after", "protective"),)),
    C("Jade", "Therapist", "disclosure",
      "And she tells me about the money stuff and what Dad's lawyer said.",
      "lower", "s=picks at her nail polish",
      emo=("feels worried and burdened", 6),
      vp=(("Carla", "her mum has nobody else to talk to", "worried"),)),
    T("Jade", "That sounds like a lot to hold, Jade.",
      "soft", "f=concerned",
      st=("join", "Validates Jade to build trust with the youngest family member.")),
    C("Carla", "Jade", "defense", "I tell you because you ask, sweetheart. I don't want to keep secrets.",
      "defensive, gentle", "i=puts her hand on Jade's knee",
      emo=("feels guilty and defensive", 6),
      vp=(("Jade", "she is mature enough to share adult worries", "trusting"),)),
    C("Ruth", "Carla", "accusation", "She's fifteen, Carla. She shouldn't know what the lawyer said.",
      "sharp", "i=turns to glare at Carla",
      emo=("feels angry and protective", 7),
      vp=(("Carla", "she burdens her daughter with adult problems", "critical"),),
      bg=("Jade", "Ruth", "Nan, don't.")),
    C("Carla", "Ruth", "defense", "Oh, here we go. Nothing I do is ever right for you, Mum.",
      "bitter", "f=rolls her eyes",
      emo=("feels judged and hurt", 7),
      vp=(("Ruth", "she has always criticised her parenting", "resentful"),)),
    P("cross_generational_coalition",
      "Ruth and Jade align against Carla over what Jade is told, leaving Carla isolated."),
    C("Jade", "Ruth", "validation", "Nan's kind of right, though. I don't always want to hear it.",
      "hesitant", "i=glances toward Ruth",
      emo=("feels guilty and relieved", 6),
      vp=(("Ruth", "her grandmother understands her", "allied"),)),
    C("Ruth", "Jade", "validation",
      "You see? She's saying it herself. You can come to mine whenever you like, love.",
      "warm to Jade, pointed", "i=pats Jade's hand",
      emo=("feels vindicated", 6),
      vp=(("Jade", "she needs rescuing from her home", "protective"),)),
    C("Carla", "Therapist", "withdrawal", "Right. So I'm the problem. Fine.",
      "hurt, clipped", "b=sits back, arms wrapped around herself",
      emo=("feels isolated and ashamed", 7),
      vp=(("Ruth", "her mother is taking her daughter from her", "hurt"),)),
    T("Carla", "Carla, I can see that landed hard. I don't think anyone here is the problem.",
      "firm, kind", "b=turns toward Carla",
      st=("safeguard", "Protects Carla from being cast as the family's problem.")),
    T("Ruth,Jade", "Ruth, Jade, I notice you two became a team just now, and Carla ended up on the outside.",
      "curious, even", "i=gestures from Ruth to Jade, then to Carla",
      st=("track", "Names the alliance between grandmother and granddaughter as it forms.")),
    C("Ruth", "Therapist", "defense", "I'm only trying to protect my granddaughter, you know.",
      "defensive", "b=straightens",
      emo=("feels misunderstood", 6),
      vp=(("Carla", "she cannot protect Jade herself", "critical"),)),
    T("Ruth", "I believe you. And I wonder who's protecting Carla.",
      "gentle", "f=holds Ruth's gaze",
      st=("reframe", "Recasts protection as something the whole family needs, Carla included.")),
    P("mixed_transition", "Ruth's alliance with Jade loosens as she turns toward Carla; coalition and "
      "softening signals are both present."),
    C("Ruth", "Carla", "disclosure", "I worry about you too, you know. I just say it badly.",
      "gruff, softer", "f=lips pressed, eyes glistening",
      emo=("feels worried and awkward", 6),
      vp=(("Carla", "her daughter is struggling and alone", "worried"),)),
    C("Carla", "Ruth", "other", "You say it like I'm failing.",
      "quiet", "f=looks away",
      emo=("feels hurt and guarded", 6),
      vp=(("Ruth", "her mother sees her as failing", "hurt"),)),
    C("Jade", "Carla,Ruth", "request", "Can you both please not? This is why I don't say anything.",
      "upset", "s=pulls her knees up",
      emo=("feels trapped and upset", 7),
      vp=(("Carla", "she is caught between her mum and her nan", "frustrated"),)),
    T("Carla,Ruth", "Jade's telling us something important. She feels she has to stay quiet to keep the "
      "peace between you two. That isn't her job.",
      "firm, warm", "i=looks at Carla and Ruth",
      st=("boundary", "Relieves Jade of managing the conflict between the two adults.")),
    T("Carla", "Carla, could you tell Jade directly which worries belong with the grown-ups from now on?",
      "encouraging", "i>Carla,Jade=gestures toward Jade",
      st=("enact", "Has Carla speak to Jade directly about which worries are hers to carry.")),
    P("repair_softening",
      "Carla reclaims her parental role and apologises to Jade; Jade and Ruth respond warmly."),
    C("Carla", "Jade", "repair",
      "The lawyer and the money are mine to deal with, not yours. I'm sorry I leaned on you.",
      "steady, tearful", "i=turns fully to face Jade",
      emo=("feels remorseful and determined", 7),
      vp=(("Jade", "she deserves to just be fifteen", "protective"),)),
    C("Jade", "Carla", "disclosure", "I just didn't want you to be sad on your own.",
      "small", "f=tears up",
      emo=("feels relieved and sad", 7),
      vp=(("Carla", "her mum was sad and alone", "caring"),)),
    C("Carla", "Jade", "validation", "I know, love. That's so kind. But it's my job to look after you.",
      "tender", "i=hugs Jade",
      emo=("feels tender and sad", 6),
      vp=(("Jade", "she has a kind heart", "loving"),)),
    T("Carla,Jade", "Take your time.", "hushed", "b=sits back", rel=""),
    T("Ruth", "Ruth, if Jade's stepping out of that job, who could Carla lean on?",
      "curious", "b=turns toward Ruth",
      st=("boundary", "Positions Ruth as Carla's adult support so that Jade can step out of the role.")),
    C("Ruth", "Carla", "repair",
      "Me, if you'd let me. I'm sorry I keep criticising. I'm frightened for you both.",
      "gentle, halting", "i=reaches across Jade to touch Carla's arm",
      emo=("feels vulnerable and hopeful", 6),
      vp=(("Carla", "she can rely on her mother", "hopeful"),)),
    C("Carla", "Ruth", "validation", "I would like that, Mum. Maybe Sunday phone calls, just us.",
      "soft", "f=tearful smile",
      emo=("feels touched", 6),
      vp=(("Ruth", "her mother can be a support rather than a critic", "hopeful"),)),
    T("Family",
      "That's a real shift. The grown-ups looking after each other, and Jade getting to be fifteen.",
      "warm", "f=smiles",
      st=("repair", "Acknowledges the repairs made between all three and consolidates the reconnection.")),
    C("Jade", "Therapist", "request", "Can I still go to Nan's on Fridays, though? Just for fun?",
      "lighter", "f=hopeful look",
      emo=("feels hopeful", 4),
      vp=(("Ruth", "Nan's house is a fun place", "affectionate"),)),
    C("Ruth", "Jade", "validation", "Of course you can. For fun, not for rescuing.",
      "warm, wry", "f=smiles",
      emo=("feels affectionate", 5)),
    C("Carla", "Jade", "other", "And maybe on Fridays I'll cook, for once.",
      "light", "f=smiles",
      emo=("feels lighter", 4)),
    T("Jade", "Jade, how does that feel?", "warm", "b=turns toward Jade"),
    C("Jade", "Therapist", "reflection", "Weird. Good weird. Like something heavy went off my chest.",
      "surprised", "s=lets out a long breath",
      emo=("feels relieved", 5)),
    T("Family", "Let's hold on to that for next time.", "warm", "f=smiles", rel=""),
))
# fmt: on

CONVERSATIONS: tuple[Conversation, ...] = (NADIA_TOM, PRIYA_SAM, GRACE_MALIK, ELENA_CHRIS, HARTLEY, MORENO)

_CUE = re.compile(r"^(?P<key>[bfsi])(?:@(?P<who>[^>=]+))?(?:>(?P<to>[^=]+))?=(?P<text>.+)$")
_CUE_FIELDS = {"b": "body_posture", "f": "facial_expressions", "s": "self_directed_behavior"}


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def _cues(turn: Turn, conv: Conversation) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {
        "body_posture": [],
        "facial_expressions": [],
        "self_directed_behavior": [],
        "interaction_behavior": [],
    }
    for item in filter(None, (part.strip() for part in turn.cues.split(";"))):
        match = _CUE.match(item)
        if match is None:
            raise ValueError(f"{conv.sample_id}: bad cue {item!r}")
        who = match["who"] or turn.speaker
        if match["key"] == "i":
            targets = _names(match["to"]) if match["to"] else _names(turn.to)
            if targets == [GROUP_LABELS[conv.scenario]]:
                targets = list(conv.participants)  # a gesture reaches people, not a label
            out["interaction_behavior"].append(
                {"initiator": who, "target": targets, "description": match["text"]}
            )
        else:
            out[_CUE_FIELDS[match["key"]]].append({"person": who, "description": match["text"]})
    return out


def _annotations(turn: Turn) -> dict[str, Any]:
    emotions = []
    if turn.emo is not None:
        emotions.append(
            {"person": turn.speaker, "emotion_description": turn.emo[0], "intensity": turn.emo[1]}
        )
    if turn.lis is not None:
        emotions.append({"person": turn.lis[0], "emotion_description": turn.lis[1], "intensity": turn.lis[2]})
    views = [{"source": turn.speaker, "target": t, "viewpoint": v, "attitude": a} for t, v, a in turn.vp]
    strategies = []
    if turn.st is not None:
        strategies.append(
            {
                "provider": THERAPIST,
                "target": _names(turn.sto or turn.to),
                "strategy_type": turn.st[0],
                "strategy_content": turn.st[1],
            }
        )
    return {"internal_emotion": emotions, "viewpoints_attitudes": views, "support_strategy": strategies}


def _relation(conv: Conversation, phase: Phase, phase_start: int, index: int, blank: bool) -> dict[str, Any]:
    # Every other row of a phase, from its first: the release labels 30-45% of rows, in stretches of
    # alternating rows, not every row.
    labelled = bool(phase.label) and not blank and (index - phase_start) % 2 == 0
    evidence = list(range(max(phase_start, index - 4), index + 1)) if labelled else []
    if labelled and phase.zero:
        evidence = [0, *evidence]  # the release has evidence lists that start at row 0
    if conv.gold_field == "relation_pattern":
        return {
            "row_index": index,
            "relation_pattern": phase.label if labelled else None,
            "relation_pattern_reason": phase.reason if labelled else None,
            "relation_pattern_evidence_rows": evidence,
        }
    return {
        "relation_cycle_state": phase.label if labelled else "",
        "relation_cycle_reason": phase.reason if labelled else "",
        "relation_cycle_evidence_rows": evidence,
        "row_index": index,
        "relation_pattern": None,
        "relation_pattern_reason": None,
        "relation_pattern_evidence_rows": [],
    }


def _times(text: str, index: int, previous_end: float | None, first_start: float) -> tuple[float, float]:
    """Speech-like timing from the word count; a varying pause keeps the clock from looking synthetic."""
    pause = (0.3, 0.6, 0.2, 0.9, 0.4)[index % 5]
    start = first_start if previous_end is None else round(previous_end + pause, 2)
    return start, round(start + 1.0 + 0.36 * len(text.split()), 2)


def _row(
    conv: Conversation, turn: Turn, index: int, span: tuple[float, float], rel: dict[str, Any]
) -> dict[str, Any]:
    cues = _cues(turn, conv)
    background = (
        []
        if turn.bg is None
        else [{"speaker": turn.bg[0], "target": _names(turn.bg[1]), "content": turn.bg[2]}]
    )
    return {
        "start_time": span[0],
        "end_time": span[1],
        "primary_speaker": turn.speaker,
        "target": _names(turn.to),
        "dialogue_cleaned": turn.text,
        "utterance_type": turn.utype,
        "background_dialogue": background,
        "tone_of_voice": turn.tone,
        "body_posture": cues["body_posture"],
        "facial_expressions": cues["facial_expressions"],
        "self_directed_behavior": cues["self_directed_behavior"],
        "interaction_behavior": cues["interaction_behavior"],
        **_annotations(turn),
        **rel,
    }


def _check(conv: Conversation, turn: Turn, phase: Phase) -> None:
    """Catch authoring slips early: unknown names and labels, misplaced fields."""
    known = {*conv.participants, THERAPIST, GROUP_LABELS[conv.scenario]}
    names = [
        turn.speaker,
        *_names(turn.to),
        *(_names(turn.sto) if turn.sto else []),
        *(v[0] for v in turn.vp),
        *((turn.lis[0],) if turn.lis else ()),
        *((turn.bg[0],) if turn.bg else ()),
    ]
    problems = [f"unknown name {n!r}" for n in names if n not in known]
    if phase.label and phase.label not in relation_labels(conv.scenario):
        problems.append(f"relation label {phase.label!r}")
    if turn.st is not None and turn.st[0] not in strategy_labels(conv.scenario):
        problems.append(f"strategy {turn.st[0]!r}")
    if (turn.speaker == THERAPIST) != (turn.utype == "") or (
        turn.utype and turn.utype not in UTTERANCE_TYPES
    ):
        problems.append(f"utterance type {turn.utype!r}")
    emotions: list[Listener] = [(turn.speaker, *turn.emo)] if turn.emo else []
    emotions += [turn.lis] if turn.lis else []
    for person, description, intensity in emotions:
        if not description.startswith("feels ") or not 0 <= intensity <= 10 or person not in known:
            problems.append(f"emotion {description!r} {intensity}")
    if problems:
        raise ValueError(f"{conv.sample_id}: {turn.text[:40]!r}: {', '.join(problems)}")


def build_sample(conv: Conversation) -> dict[str, Any]:
    """Expand one authored conversation into a release-format sample object."""
    rows: list[dict[str, Any]] = []
    phase, phase_start, end = Phase(""), 1, None
    for item in conv.script:
        if isinstance(item, Phase):
            phase, phase_start = item, len(rows) + 1
            continue
        index = len(rows) + 1
        _check(conv, item, phase)
        span = _times(item.text, index, end, conv.start)
        end = span[1]
        rows.append(_row(conv, item, index, span, _relation(conv, phase, phase_start, index, item.rel == "")))
    return {
        "sample_id": conv.sample_id,
        "scenario": conv.scenario,
        "participants": list(conv.participants),
        "source_file": f"demo/{conv.sample_id}.json",
        "rows": rows,
    }


def build() -> str:
    """The whole demo dataset as JSONL text, one sample per line."""
    return "".join(json.dumps(build_sample(conv), ensure_ascii=False) + "\n" for conv in CONVERSATIONS)


def main() -> None:
    text = build()
    OUT.write_text(text, encoding="utf-8")
    rows = sum(len(build_sample(conv)["rows"]) for conv in CONVERSATIONS)
    print(f"wrote {len(CONVERSATIONS)} samples, {rows} rows to {OUT}")


if __name__ == "__main__":
    main()
