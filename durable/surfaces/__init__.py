"""Where people and machines reach the engine: the admin, the REST API, ``manage.py
durable``, the metrics, the health checks and the system checks. They call the client API
and the features; nothing in the engine imports them."""
