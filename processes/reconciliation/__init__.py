"""Daily payment reconciliation: bank statement against ledger, one correction per gap."""
