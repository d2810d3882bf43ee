"""Model calls and what they cost: the model a call uses, fallback, rate limits, usage, budgets."""
