"""The WhatsApp channel: inbound messages, outbound messages, delivery statuses, media."""
