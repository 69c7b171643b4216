"""specdec_core: the numbers behind every figure and readout. Pure numpy: no streamlit, no torch."""
