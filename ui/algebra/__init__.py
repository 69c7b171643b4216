"""The algebra page's helpers: figures, decoder-shape cost mode, paste box, papers, temperature."""
