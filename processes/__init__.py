"""The business processes: onboarding over WhatsApp, billing reminders, reconciliation."""
