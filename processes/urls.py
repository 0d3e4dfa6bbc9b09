"""URLs of the processes app."""
urlpatterns = []
