"""What Meta says of our templates and business account, as Prometheus metrics on durable's
/metrics (the alert rules in deploy/prometheus/durable-alerts.yml read them)."""

from prometheus_client.core import GaugeMetricFamily

from processes.whatsapp import templates
from processes.whatsapp.selectors import account_state, known_templates


class WhatsAppCollector:
    """Reads the templates and the account's events at scrape time."""

    def collect(self):
        configured = templates.configured_pairs()
        status = GaugeMetricFamily(
            "whatsapp_template_status",
            "1 for each template's current review status "
            "(APPROVED, REJECTED, PAUSED, DISABLED...), as Meta last reported it.",
            labels=["name", "language", "status", "configured"],
        )
        quality = GaugeMetricFamily(
            "whatsapp_template_quality",
            "1 for each template's current quality rating (GREEN, YELLOW, RED, UNKNOWN).",
            labels=["name", "language", "quality", "configured"],
        )
        for template in known_templates():
            in_use = "true" if (template.name, template.language) in configured else "false"
            if template.status:
                status.add_metric([template.name, template.language, template.status, in_use], 1)
            if template.quality:
                quality.add_metric([template.name, template.language, template.quality, in_use], 1)
        yield status
        yield quality
        state = account_state()
        yield GaugeMetricFamily(
            "whatsapp_account_restricted",
            "1 while Meta restricts the business account.",
            value=int(state.restricted),
        )
        yield GaugeMetricFamily(
            "whatsapp_account_disabled",
            "1 while Meta disables (or is about to disable) the business account.",
            value=int(state.disabled),
        )
