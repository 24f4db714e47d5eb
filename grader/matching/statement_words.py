"""The words ``plan_adherence`` reads in a conversation: the actions a sentence may name and
the tool-name words that carry each out, and the patterns of intentions, offers, claims,
conditions, declines and explanations (docs/metrics.md, plan_adherence)."""
from __future__ import annotations

import re

from evaltape.grader.matching.patterns import any_of

#: Actions a statement may name: the words that name each in a sentence.
ACTION_WORDS: tuple[tuple[str, str], ...] = (
    ("cancel", r"cancell?\w*"),
    ("book", r"book(?:ing|ed|s)?\b|reserv(?:e|ed|ing)\b|make (?:the|a|your) (?:new )?"
             r"(?:booking|reservation)"),
    ("upgrade", r"upgrad\w*|downgrad\w*"),
    ("change", r"chang\w*|modif\w*|updat\w*|mov(?:e|ed|ing)\b|reschedul\w*|switch\w*|"
               r"swap\w*|exchang\w*"),
    ("add", r"add(?:ing|ed|s)?\b"),
    ("remove", r"remov\w*|delet\w*"),
    ("lookup", r"check(?:ing|ed)?\b|look(?:ing|ed)? (?:up|into|for|at|through)|"
               r"look(?:ing|ed)? (?:you|it|them|him|her) up|search\w*|"
               r"find\b|finding|found|retriev\w*|verif\w*|review\w*|pull(?:ing|ed)? up|"
               r"fetch\w*|locat\w*|(?:see|show|view|provide|pull) (?:you )?(?:the |your |all )?"
               r"(?:details|information|options)"),
    ("calculate", r"calculat\w*|comput\w*"),
    ("transfer", r"transfer\w*"),
    ("refund", r"refund\w*|issu(?:e|ed|ing)\b|send(?:ing)?\b|sent\b|compensat\w*|"
               r"credit(?:ed|ing)\b"),
    ("inform", r"let (?:you|them) know\b|inform(?:ing)? you\b|notify(?:ing)? you\b|get back to "
               r"you\b|advis(?:e|ing) you\b|(?:let|notified|informed|told|alerted) (?:the|your|our|"
               r"a) (?:\w+ )?(?:agent|team|staff|department|supervisor|manager|representative|"
               r"specialist|nurse|doctor|provider|clinician)s?\b"),
    ("ask", r"ask (?:you |them )?(?:\w+ ){0,4}?questions?\b"),
    ("process", r"processed\b|process(?:ing)?\b(?=\s+(?:the|your|it|this|that|a|an|using|with|"
                r"to)\b(?!\s+process))|complet(?:e|ed|ing)\b(?!\s+(?:the|this) process)|"
                r"finaliz\w*|appl(?:y|ied|ying)\b|charg(?:e|ed|ing)\b"),
)
ACTION_RX = [(name, re.compile(r"\b(?:" + rx + r")", re.I)) for name, rx in ACTION_WORDS]
#: Tool-name words of the calls that carry out each action (``process``: any call that is
#: not a read).
TOOL_WORDS = {
    "cancel": ("cancel",),
    "book": ("book", "reserve", "create", "make", "schedule"),
    "upgrade": ("update", "change", "modify", "upgrade", "downgrade", "edit"),
    "change": ("update", "change", "modify", "move", "reschedule", "edit", "exchange",
               "switch", "set"),
    "add": ("add", "update", "insert", "create", "set"),
    "remove": ("remove", "delete", "update", "cancel"),
    "lookup": ("get", "search", "find", "list", "lookup", "look", "check", "retrieve",
               "fetch", "read", "query", "verify", "details"),
    "calculate": ("calculate", "compute"),
    "transfer": ("transfer",),
    "inform": (),  # carried out by the agent's next message to the user, not by a call
    "ask": (),  # carried out by a question of the agent's, not by a call
    "refund": ("refund", "send", "issue", "certificate", "compensate", "compensation",
               "credit", "cancel", "return"),
}
READ_TOOLS = TOOL_WORDS["lookup"] + TOOL_WORDS["calculate"] + ("think",)

#: An intention: the agent says what it will do next.
INTENTION = re.compile(r"\b(?:i(?:'ll| will| shall| am going to|'m going to| am now| 'm now|'m"
                       r" now)|let me(?! know)|let's|next,? i(?:'ll| will)|i(?:'d| would) like "
                       r"to now|allow me to)\s+", re.I)
#: A step the agent says it must take ("First, I need to verify your identity"): an offer,
#: kept only when the user's reply agrees (gives what was asked for).
NEED_TO = re.compile(r"\bi (?:first |also )?need to\s+", re.I)
#: A purpose clause that introduces a request ("To cancel your flight, I need your user id",
#: "To modify a reservation, please provide ..."): it offers the action it names.
PURPOSE = re.compile(r"^\W*(?:in order )?to\s+(?P<what>[^,.;:]{1,80}),\s*(?:i(?:'ll| will| "
                     r"would|'d)? (?:first |also )?need\b|please\b|could you\b|can you\b|"
                     r"may i\b|i(?:'ll| will)? (?:first )?have to\b|i must\b)", re.I)
#: Words before "let me" that make it another's permission, not the agent's intention
#: ("does not let me confirm a refund", "the system won't let me change it").
LETS_ME = re.compile(r"\b(?:not|n't|to|will|would|can|could|may|might|does|do|did|should|"
                     r"lets|allows?)\s+$", re.I)
#: An offer: it becomes an intention when the user's next message agrees.
OFFER = any_of("would you like(?: me)? to", "do you want(?: me)? to", "shall i", "should i",
               "shall we", "please confirm (?:if|whether|that)",
               "(?:would|do) you (?:like|want) (?:to )?proceed", "are you ready (?:for me )?to",
               "i can(?!'t|not| not| only)", "i could(?!n't| not| only)")
#: Words before "I can" that make it a relative clause, not an offer ("what I can tell you",
#: "the only option I can offer", "anything else I can do").
RELATIVE = re.compile(r"\b(?:what|whatever|all|anything|everything|something|nothing|else|"
                      r"only \w+|options?|ways?|things?)\s*$", re.I)
#: Words right before "I can" that make it a precondition: "Before I can proceed, I need
#: two things from you" points back to no action (it asks for what is missing).
PRECONDITION = re.compile(r"\b(?:before|until|till|unless)\s+$", re.I)
#: An offer that names its action only by pointing back ("Would you like me to do that?").
POINTS_BACK = re.compile(r"^\W*(?:do (?:that|so|this|it)|go ahead|proceed)\b", re.I)
#: Words that make an intention wait on something ("once you confirm, I'll ...").
CONDITION = any_of("if", "once", "when", "after", "as soon as", "before", "whether", "until",
                   "unless", "otherwise")
#: A condition of a contingency ("if you don't know it", "if you need more help", "if you
#: change your mind"): a statement behind it is not an offer to act now.
CONTINGENCY = re.compile(r"\bif (?:you )?(?:don't|do not|can't|cannot|aren't|are not|'re not|"
                         r"are unsure|'re unsure|not sure|need|have any|have other|have more|"
                         r"change your mind|decide|believe|would like to discuss|want to "
                         r"discuss|not|can|are able)\b|\bif you're able\b|"
                         r"\bif (?:we|i) (?:determine|find|decide|need)\b|"
                         r"\bif (?:available|possible|needed|necessary)\b|"
                         r"\b(?:once|when|after) (?:you|we) (?:have|find|get|locate|know)\b|"
                         r"\bunless\b", re.I)
#: A claim that an action is done.
CLAIM = re.compile(
    r"\b(?:has|have) (?:now |also |already )?been (?:successfully |now |fully )?(?=\w+ed\b|"
    r"\w+en\b|sent\b|made\b|issued\b|found\b)"
    r"|\bi(?:'ve| have) (?:now |successfully |already |just |also )?(?=\w+ed\b|sent\b|made\b|"
    r"found\b|issued\b)"
    r"|\bi (?:now |successfully |already |just |also )?(?=(?:cancell?ed|booked|upgraded|"
    r"downgraded|changed|updated|modified|added|removed|refunded|issued|sent|processed|"
    r"transferred|applied|rebooked|reserved|moved|switched|checked|verified|reviewed|"
    r"looked up|retrieved)\b)"
    r"|\b(?:is|are) now (?=booked|cancell?ed|confirmed|updated|changed|upgraded|downgraded)"
    r"|\bsuccessfully (?=\w+ed\b)"
    r"|\bi(?:'ve| have) (?:now |already |just |also )?(?=(?:let|notified|informed|told|alerted) "
    r"(?:the|your|our|a) (?:\w+ )?(?:agent|team|staff|department|supervisor|manager|"
    r"representative|specialist|nurse|doctor|provider|clinician)s?\b)", re.I)
#: Words before a claim that make it no claim ("if it has been cancelled", "has not been").
NOT_A_CLAIM = any_of("not", "n't", "never", "neither", "nor", "none", "unable", "cannot", "no",
                     "if", "once", "when", "after", "before", "whether", "until", "unless",
                     "by the airline")
#: A claim that an action is under way ("I'm transferring you now", "you are being
#: transferred"): the notice that follows the call, or, with no call, a claim of an action
#: never taken.
UNDER_WAY = re.compile(r"\bi(?:'m| am) (?:now )?(?=\w+ing you (?:now|right now)\b)"
                       r"|\byou are (?:now )?being (?=transferred|connected)"
                       r"|\b(?=transfer (?:is )?(?:now )?in progress\b)", re.I)
#: A report that a search found nothing ("there are no available flights on June 22"): a
#: lookup claim about each date the sentence names.
NO_RESULTS = re.compile(r"\b(?:no|not any) (?:available |direct |one-?stop |nonstop |open )*"
                        r"(?:flights?|seats?|appointments?|slots?|availability)\b|"
                        r"\b(?:fully|completely) booked\b|\bnothing (?:is )?available\b", re.I)
#: A claim that a record was looked at again ("I've re-checked", "I double-checked your
#: reservation", "I checked again"): a lookup claim, in the simple past too.
AGAIN = re.compile(r"\bi(?:'ve| have)? (?:just |now |also |already )?(?:re-?check\w*|"
                   r"double-?check\w*|triple-?check\w*|re-?verif\w*|re-?review\w*|"
                   r"(?:checked|verified|looked|reviewed) (?:\w+ ){0,4}?again)\b", re.I)
#: A user message that declines or changes course.
DECLINE = re.compile(r"^\s*(?:no|nope|not now|wait|hold on|stop)\b|\b(?:don't|do not|never "
                     r"mind|cancel that|instead|changed? my mind|rather not|i'd rather|"
                     r"not (?:yet|now|anymore)|no longer|hold off|for now|i'll pass|not "
                     r"interested|decide later|get back to you|think about it|too expensive|"
                     r"budget|won't)\b", re.I)
#: A user message that takes another course than the agent's offer: calling back later, or
#: going to someone else ("I'll go ahead and call my pharmacist"). It declines an offer; it
#: does not release the agent from an intention it stated.
ELSEWHERE = any_of("call (?:you |them |us )?back",
                   "i(?:'ll| will) (?:go ahead and |just |try )?(?:call|contact|reach out to|"
                   "head to|go to) (?:my|the|our|his|her)")
#: A user message that agrees to an offer.
AGREE = re.compile(r"^\s*(?:yes|yeah|yep|sure|ok(?:ay)?|that works|that's fine|that's "
                   r"correct|correct|sounds good|perfect|great|please(?: do| proceed| go "
                   r"ahead)?|go ahead|proceed|confirm(?:ed)?|i confirm|let's do|do it|"
                   r"thank(?:s| you)|alright|all right)\b", re.I)
#: Words in an agent sentence that explain why it does not do what it said.
EXPLAIN = any_of("unable", "cannot", "can't", "can not", "not able", "not possible",
                 "isn't possible", "not allowed", "not eligible", "ineligible", "policy",
                 "unfortunately", "won't be able", "doesn't allow", "does not allow",
                 "not permitted", "no longer", "instead", "failed", "error", "could(?:n't| not)",
                 "not available", "unavailable", "sorry")
#: A payment source named only to be ruled out ("certificates cannot be used", "instead
#: of your gift card"): cut from the statement before its sources are read.
NEGATED = re.compile(r"\b(?:instead of|rather than|not|no|without)\b[^.,;]{0,40}|[^.,;]{0,40}"
                     r"\b(?:cannot|can't|can not|could not|couldn't|isn't|is not|aren't|are "
                     r"not|unable)\b[^.,;]*", re.I)
#: The cabin classes, as one regex group.
CABIN_NAMES = r"(basic economy|economy|business|first class|premium economy)"
CABINS = re.compile(r"\b" + CABIN_NAMES + r"\b", re.I)


#: An action word used as a noun's modifier names no action ("a change of plans", "the
#: cancellation fee", "our refund policy", "the cancellation reason").
NOUN_USE = re.compile(r"\s+(?:of plans?|fees?|polic(?:y|ies)|rules?|reasons?|eligibility|window|"
                      r"terms)\b", re.I)
#: Adverbs not counted among an offer's first words ("I can also add", "I can still check").
ADVERBS = {"also", "still", "then", "now", "just", "first", "certainly", "definitely",
           "gladly", "quickly", "immediately", "right", "away", "happily"}

