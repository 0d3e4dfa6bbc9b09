"""Opening a business (PJ) account over WhatsApp: company, documents, account."""
