"""gpu_demo: the live engine, real speculative decoding in PyTorch, for CPU and CUDA alike. No streamlit.

The name is historical (the project's layout and the README use it): the same code runs on a CPU, in float32
or with the CPU paths it probes (packed weights, bf16 where the CPU has it), and on a CUDA GPU; the device
is chosen at run time (``gpu_demo.device``). The live page, the CLI (``python -m gpu_demo``) and bench/ use it.
"""
