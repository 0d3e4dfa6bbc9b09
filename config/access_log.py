"""gunicorn's logger for this project (gunicorn.conf.py names it): its lines without secrets."""

from gunicorn.glogging import Logger

from config.log_filters import SecretsScrubbed


class ScrubbedLogger(Logger):
    """gunicorn's own logger, the query string of a request line included, with the value of
    a secret query parameter (``hub.verify_token``) written as ``***`` in the access log and
    in the error log ("Error handling request <uri>")."""

    def setup(self, cfg):
        super().setup(cfg)  # also run on every reload (SIGHUP): add the filter once
        for log in (self.error_log, self.access_log):
            if not any(isinstance(existing, SecretsScrubbed) for existing in log.filters):
                log.addFilter(SecretsScrubbed())
