"""Compensation (SPEC C-1 … C-9): failure policies, compensation actions,
Saga registration and tickets with their history."""
