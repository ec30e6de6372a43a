"""Claude through the ``anthropic`` SDK: configuration, the request, the call.

Configuration: the :class:`common.settings.ClaudeSettings` group, read once at start-up and
handed in by the caller (:class:`bot.answer.service.AnswerService`); its variables:
    ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL   read by the SDK itself; no key -> no Claude
    CODERAG_CLAUDE_MODEL        model id (default :data:`DEFAULT_MODEL`)
    CODERAG_CLAUDE_MAX_TOKENS   answer length cap, tokens (default 1024)
    CODERAG_CLAUDE_MAX_RETRIES  SDK retries on 408/409/429/5xx/529 and connection errors,
                                exponential backoff honouring retry-after (default 3)
    CODERAG_CLAUDE_TIMEOUT      seconds per attempt (default 60)
    CODERAG_CLAUDE_CONTEXT_TOKENS  context window the prompt must fit, tokens (default 200000)

``build_request`` returns the keyword arguments of ``client.messages.create`` (a plain dict,
so tests and logs can see exactly what is sent). ``generate`` raises
:class:`ClaudeUnavailable` when the API cannot answer after the SDK's retries.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # the SDK costs ~1 s to import: only commands that call Claude pay it
    import anthropic

from common.settings import ClaudeSettings

from .prompt import SYSTEM_PROMPT, format_sources, question_block

# Newest Sonnet-class id in the installed SDK's model literals (anthropic 2.14:
# anthropic.types.Model); "claude-sonnet-4-5" is marked deprecated there. The defaults
# are declared once, in :class:`common.settings.ClaudeSettings`.
DEFAULT_MODEL: str = ClaudeSettings.model_fields["model"].default
DEFAULT_MAX_TOKENS: int = ClaudeSettings.model_fields["max_tokens"].default
DEFAULT_MAX_RETRIES: int = ClaudeSettings.model_fields["max_retries"].default
DEFAULT_TIMEOUT_SECONDS: float = ClaudeSettings.model_fields["timeout"].default
# Sonnet-class context window, tokens.
DEFAULT_CONTEXT_TOKENS: int = ClaudeSettings.model_fields["context_tokens"].default


class ClaudeUnavailable(Exception):
    """The Messages API did not answer (down, rate-limited past retries, auth, bad reply)."""


def make_client(cfg: ClaudeSettings) -> anthropic.Anthropic:
    """An SDK client with the key of ``cfg`` (``ANTHROPIC_API_KEY``); the base URL comes
    from the SDK's own ``ANTHROPIC_BASE_URL``."""
    import anthropic

    return anthropic.Anthropic(api_key=cfg.api_key.strip() or None, max_retries=cfg.max_retries,
                               timeout=cfg.timeout)


def history_messages(history: Sequence) -> list[dict]:
    """Thread turns as Messages API messages: leading assistant turns are dropped (the
    conversation starts with the user), consecutive same-role turns are joined. A last
    user turn followed by the new question is fine: the API combines consecutive turns."""
    msgs: list[dict] = []
    for t in history:
        role = "assistant" if t.role == "assistant" else "user"
        text = (t.text or "").strip()
        if not text or (not msgs and role == "assistant"):
            continue
        if msgs and msgs[-1]["role"] == role:
            msgs[-1]["content"] += "\n\n" + text
        else:
            msgs.append({"role": role, "content": text})
    return msgs


def build_request(cfg: ClaudeSettings, *, question: str, persona: str, source_blocks: Sequence[str],
                  history: Sequence = ()) -> dict:
    """``messages.create`` keyword arguments: cached system prompt, earlier thread turns,
    then one user message holding the delimited sources and, last, the question."""
    return {
        "model": cfg.model,
        "max_tokens": cfg.max_tokens,
        "system": [{"type": "text", "text": SYSTEM_PROMPT, "cache_control": {"type": "ephemeral"}}],
        "messages": [
            *history_messages(history),
            {"role": "user", "content": [
                {"type": "text", "text": format_sources(source_blocks)},
                {"type": "text", "text": question_block(question, persona)},
            ]},
        ],
    }


@dataclass
class Generation:
    """The model's text and the API's usage numbers (tokens, including cache reads/writes)."""

    text: str
    model: str
    usage: dict
    stop_reason: str | None


def generate(client: anthropic.Anthropic, request: dict) -> Generation:
    """Call the Messages API (the SDK retries with backoff). Raises :class:`ClaudeUnavailable`."""
    import anthropic

    try:
        msg = client.messages.create(**request)
    except anthropic.AnthropicError as exc:
        raise ClaudeUnavailable(_describe(exc)) from exc
    text = "".join(getattr(b, "text", "") for b in msg.content if getattr(b, "type", "") == "text").strip()
    if not text:
        raise ClaudeUnavailable(f"the model returned no text (stop_reason={msg.stop_reason})")
    usage = msg.usage.model_dump(exclude_none=True) if msg.usage is not None else {}
    return Generation(text=text, model=msg.model or request["model"], usage=usage,
                      stop_reason=msg.stop_reason)


def _describe(exc: Exception) -> str:
    import anthropic

    status = getattr(exc, "status_code", None)
    if isinstance(exc, anthropic.APITimeoutError):
        return "the request timed out"
    if isinstance(exc, anthropic.APIConnectionError):
        return "could not connect to the API"
    if status:
        return f"the API answered HTTP {status}"
    return type(exc).__name__


# The structured answerability judgement asked before the answer is written (a forced
# tool call, so the reply is JSON the SDK has already parsed).
ANSWERABILITY_TOOL = {
    "name": "answerability",
    "description": "Judge whether the numbered sources answer the question, before any answer is written.",
    "input_schema": {
        "type": "object",
        "properties": {
            "answerable": {"type": "string", "enum": ["yes", "partly", "no"],
                           "description": "yes: the sources answer it; partly: some of it; no: nothing in them does."},
            "uncovered": {"type": "array", "items": {"type": "string"},
                          "description": "The question's terms or parts that no source covers (short phrases)."},
            "reason": {"type": "string", "description": "One sentence."},
        },
        "required": ["answerable", "uncovered"],
    },
}
JUDGE_MAX_TOKENS = 300


@dataclass
class Judgement:
    """Claude's answerability verdict: ``answerable`` is ``yes``, ``partly`` or ``no``."""

    answerable: str
    uncovered: list[str]
    reason: str
    usage: dict


def judge_answerability(client: anthropic.Anthropic, request: dict) -> Judgement:
    """Ask for the structured judgement on the same system prompt, history and sources as
    the answer ``request`` (see :func:`build_request`), as a forced tool call. Raises
    :class:`ClaudeUnavailable` on API failure or a reply without the tool call."""
    import anthropic

    req = {**request, "max_tokens": JUDGE_MAX_TOKENS, "tools": [ANSWERABILITY_TOOL],
           "tool_choice": {"type": "tool", "name": ANSWERABILITY_TOOL["name"]}}
    try:
        msg = client.messages.create(**req)
    except anthropic.AnthropicError as exc:
        raise ClaudeUnavailable(_describe(exc)) from exc
    block = next((b for b in msg.content if getattr(b, "type", "") == "tool_use"), None)
    data = getattr(block, "input", None)
    if not isinstance(data, dict) or data.get("answerable") not in ("yes", "partly", "no"):
        raise ClaudeUnavailable("the answerability judgement was malformed")
    usage = msg.usage.model_dump(exclude_none=True) if msg.usage is not None else {}
    unc = [str(u) for u in data.get("uncovered") or [] if str(u).strip()]
    return Judgement(answerable=data["answerable"], uncovered=unc[:10],
                     reason=str(data.get("reason") or ""), usage=usage)
