"""Adapters from model providers to the agent side (``openai``: Chat Completions)."""
