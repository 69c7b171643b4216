"""Interview prose, kept out of the maths core: the checklist, concept questions, flashcards, the
30-second answer, the guided walkthrough, and the words of each numeric drill.

Every number this prose shows is computed by ``specdec_core``; nothing here does maths of its own.
"""
