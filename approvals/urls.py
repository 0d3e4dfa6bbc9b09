"""URLs of the approvals app: sign-in and the reviewer's pages (no namespace, so LOGIN_URL =
"login")."""

from django.contrib.auth import views as auth_views
from django.urls import path

from approvals import views

urlpatterns = [
    path(
        "login/",
        auth_views.LoginView.as_view(
            template_name="approvals/login.html", redirect_authenticated_user=True
        ),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("language/", views.LanguageView.as_view(), name="set_language"),
    path("approvals/", views.QueueView.as_view(), name="approval_queue"),
    path("approvals/mine/", views.MineView.as_view(), name="approval_mine"),
    path("approvals/next/", views.NextCaseView.as_view(), name="approval_next"),
    path("approvals/archive/", views.ArchiveView.as_view(), name="approval_archive"),
    path("approvals/<int:pk>/", views.CaseView.as_view(), name="approval_case"),
    path("approvals/<int:pk>/live/", views.CaseLiveView.as_view(), name="approval_case_live"),
    path("approvals/<int:pk>/evidence/", views.EvidenceView.as_view(), name="approval_evidence"),
    path(
        "approvals/<int:pk>/claim/",
        views.CaseActionView.as_view(action="claim"),
        name="approval_claim",
    ),
    path(
        "approvals/<int:pk>/release/",
        views.CaseActionView.as_view(action="release"),
        name="approval_release",
    ),
    path(
        "approvals/<int:pk>/decide/",
        views.CaseActionView.as_view(action="decide"),
        name="approval_decide",
    ),
    path(
        "approvals/<int:pk>/note/",
        views.CaseActionView.as_view(action="note"),
        name="approval_note",
    ),
    path(
        "approvals/<int:pk>/follow-up/",
        views.CaseActionView.as_view(action="follow_up"),
        name="approval_follow_up",
    ),
    path(
        "approvals/<int:pk>/reassign/",
        views.SupervisorActionView.as_view(action="reassign"),
        name="approval_reassign",
    ),
    path(
        "approvals/<int:pk>/unclaim/",
        views.SupervisorActionView.as_view(action="unclaim"),
        name="approval_unclaim",
    ),
    path(
        "approvals/<int:pk>/extend/",
        views.SupervisorActionView.as_view(action="extend"),
        name="approval_extend",
    ),
    path(
        "approvals/<int:pk>/override-hold/",
        views.SupervisorActionView.as_view(action="override_hold"),
        name="approval_override_hold",
    ),
    path("approvals/team/", views.TeamView.as_view(), name="approval_team"),
    path("approvals/dashboard/", views.DashboardView.as_view(), name="approval_dashboard"),
]
