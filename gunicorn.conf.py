"""gunicorn's settings for this project, read from the working directory it starts in
(deploy/durable-web.service, tests/config/test_gunicorn.py, benchmarks/product.py); the
command line sets the rest.
"""

# Its access log writes each request line, query string included: secrets come out first.
logger_class = "config.access_log.ScrubbedLogger"
