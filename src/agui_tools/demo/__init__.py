"""The offline demo: a scripted agent and a terminal application, on loopback."""
