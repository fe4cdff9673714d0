"""A local language model, offline: install (``install``), serve (``server``), catalog.

Nothing here imports xllamacpp at module import; the server module loads it when it
serves. See docs/local-model.md.
"""
