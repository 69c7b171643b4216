"""The live session without Streamlit: its settings, runs (race, sweep) and records, and the device's turn queue.

The live page (views/live.py, ui/live/), the roofline page's probe and bench/live_race_spread.py all drive
these, so a page and a benchmark run the same code path and see the same events.
"""
