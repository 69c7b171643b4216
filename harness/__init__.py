"""The browser harness of tests/ and bench/: a loopback Streamlit server, Chromium's flags, settle probes."""
