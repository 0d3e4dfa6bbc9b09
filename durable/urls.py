"""URLs of the durable app."""
urlpatterns = []
