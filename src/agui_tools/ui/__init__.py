"""User interfaces over Session: ``terminal`` (rich)."""
