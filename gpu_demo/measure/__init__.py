"""Measurement: the bench (tokens/s and the algebra's prediction), the roofline probe, batch timing."""
