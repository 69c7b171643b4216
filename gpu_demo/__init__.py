"""gpu_demo: real speculative decoding in PyTorch (CPU or CUDA, chosen at run time). No streamlit."""
