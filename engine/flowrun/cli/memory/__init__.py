"""`flowrun memory`: a person's side of an agent's memory (show, search, edit, forget, export)."""
