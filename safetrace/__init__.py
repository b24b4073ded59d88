"""safetrace: sound graph export for PyTorch programs."""
