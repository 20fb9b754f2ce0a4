"""Provider views of a context, and the inverse used by ``sync()``.

A context (``Session.context(resolve=True)``: the latest compaction first,
then the events it kept and everything after) becomes the request payload
of an OpenAI-style API:

- ``to_chat_messages``: Chat Completions ``messages``;
- ``to_responses_input``: Responses API ``input`` items.

(``providers_anthropic`` renders the same neutral form for Anthropic's
Messages API, where thinking is kept and system text moves out of the
messages.)

A ``compaction`` or ``branch_summary`` becomes a framed user message;
``state``, ``label``, ``custom`` and other custom kinds are never sent.
Both views keep the **pairing guarantee** providers enforce: every tool
call has exactly one result, placed after it and before the next message.
The log may break it (a turn interrupted between call and result, a context
cut by hand, a duplicated result), so the views repair it:

- a result whose call is not open (absent, already answered, or closed by
  a later message) is dropped;
- a call still unanswered when the next message arrives (or the context
  ends) gets a synthetic error result, ``INTERRUPTED``. A synthetic result
  rather than dropping the call keeps what the assistant tried visible to
  the model, and the wording tells it the tool did not run to completion.

``events_to_chat_messages`` is the faithful view (no repair) that mirrors
``chat_messages_to_drafts``, so ``sync()`` can compare a caller's message
list with what is stored: chat -> drafts -> events -> chat is the identity
for ordinary messages (``normalize_chat_messages`` gives the canonical form
of any list: dicts, known fields only, empty optional fields dropped).

Thinking parts (``thinking``, ``redacted_thinking``: Anthropic's, as
imported Claude Code and pi sessions hold them) are not sent: neither API
takes them as content. An assistant message whose content is an empty list of parts (a reply
that failed before its first token, as pi records one; a Codex reasoning
item kept alone) is sent as one with no content, which the APIs accept
where they refuse an empty list: null beside tool calls, else "". Empty
text beside tool calls (the agent loop stores "") is sent as null too.

Only fields the APIs accept are sent; records keep everything else
(usage, reasoning, provider ids), per docs/records.md. Content parts are
sent in the view's own API: Chat ``text`` / ``image_url`` parts become
Responses ``input_text`` or ``output_text`` / ``input_image`` parts, and
Responses parts (as the Agents SDK adapter stores them) become Chat parts.

Each API's view lives in a module of its own, so that one API's rules
are read and changed apart from the others'. This module is the import
path to use for the OpenAI views and the neutral form: it names what
they define, as it always has.

- ``providers_neutral``: the neutral form every view renders (the
  pairing repair, the framing of summaries) and the helpers views share;
- ``providers_openai_chat``: Chat Completions, both ways (the views and
  the ``sync()`` inverse);
- ``providers_openai_responses``: the Responses API view;
- ``providers_anthropic``: Anthropic's Messages API view.
"""

from __future__ import annotations

# The names below not in __all__ (the neutral form and its helpers) are
# re-exported explicitly ("X as X"): code that imported them from here
# keeps working, while the library's surface stays __all__.
from .providers_neutral import BRANCH_PREFIX as BRANCH_PREFIX
from .providers_neutral import COMPACTION_PREFIX as COMPACTION_PREFIX
from .providers_neutral import INTERRUPTED
from .providers_neutral import MESSAGE_ROLES as MESSAGE_ROLES
from .providers_neutral import NeutralMessage as NeutralMessage
from .providers_neutral import NeutralResult as NeutralResult
from .providers_neutral import event_triples as event_triples
from .providers_neutral import neutral_form as neutral_form
from .providers_neutral import part_type as part_type
from .providers_neutral import server_results as server_results
from .providers_neutral import system_prompt_text as system_prompt_text
from .providers_openai_chat import (
    as_message_dict,
    chat_messages_to_drafts,
    events_to_chat_messages,
    normalize_chat_messages,
    to_chat_messages,
)
from .providers_openai_responses import to_responses_input

__all__ = [
    "INTERRUPTED",
    "as_message_dict",
    "chat_messages_to_drafts",
    "events_to_chat_messages",
    "normalize_chat_messages",
    "to_chat_messages",
    "to_responses_input",
]
