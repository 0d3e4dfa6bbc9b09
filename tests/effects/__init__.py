"""A test-only app: a table where test steps record their effects, so tests can count them."""
