"""Features built on the runtime through its client API: schedules, the archive of finished
runs, bulk operations, exported histories and the REST API's tokens. Nothing below imports them."""
