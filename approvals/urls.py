"""URLs of the approvals app."""
urlpatterns = []
