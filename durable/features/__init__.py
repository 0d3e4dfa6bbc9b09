"""Features built on the runtime through its client API: schedules, the archive of finished
runs, bulk operations and exported histories. Nothing below imports them."""
