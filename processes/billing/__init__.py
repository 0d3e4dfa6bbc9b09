"""Billing reminders (the `cobranca` challenge): invoices, reminders, finance tickets."""
