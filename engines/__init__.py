"""Real inference engines, no Streamlit: the embedded llama.cpp server, a client for an OpenAI-compatible endpoint,
the reading of each engine's speculative counters into specdec_core's one SpecDecodeCounts, and the workload runner.

embedded   llama.cpp's server in-process (xllamacpp) on the shipped SmolLM2 GGUF, one per mode, on a free loopback port
client     bounded HTTP (timeouts, size caps), the outside-URL allow-list, engine recognition, counter scrapes
workload   the committed chat prompts with speculation off and on, interleaved; counters differenced -> the algebra
"""
