"""Drop-in storage for agent frameworks, each an optional extra.

- ``agentlog.integrations.openai_agents``: ``AgentlogSession`` (OpenAI Agents SDK,
  extra ``openai-agents``)
- ``agentlog.integrations.adk``: ``AgentlogSessionService`` (Google ADK, extra ``adk``)
- ``agentlog.integrations.langgraph``: ``AgentlogSaver`` (LangGraph, extra ``langgraph``)

Nothing here is imported by the core package, and this package imports no
framework itself: each framework is imported only by its own module (and
the private modules it is made of: ``_adk_*`` for ADK, ``_lg_*`` for
LangGraph).
"""
